"""Driving JupyterLab in headless Chromium the way a student uses it: open a notebook from its
URL, Run > Run All Cells from the menu bar, File > Save, and read back what the page shows.

Chromium and chromedriver are Debian's packages (tests/appliance/host-deps.sh); Selenium is
pointed at both binaries, so its driver manager never looks for (or downloads) a browser.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# JupyterLab renders an exception like any stderr text (same mime type, no mark of its own):
# an output is an error when it shows IPython's traceback header or an exception's last line
# ("ZeroDivisionError: ...", a SyntaxError has no header). Warnings (UserWarning: ...) are not.
STDERR_MIME = "application/vnd.jupyter.stderr"
ERROR_RE = r"/Traceback \(most recent call last\)|^\s*\w*(Error|Exception)(: |$)/m"
#: the notebook in front: JupyterLab restores the tabs of earlier visits, hidden behind it
CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def start_chromium(width: int = 1400, height: int = 1400) -> webdriver.Chrome:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox",  # root, in a container-like sandbox
                "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--disable-extensions",
                f"--window-size={width},{height}", "--hide-scrollbars"):
        opts.add_argument(arg)
    return webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))


@dataclass
class CellView:
    """One notebook cell as the page renders it."""

    index: int
    kind: str  # "code" or "markdown"
    source: str
    prompt: str
    element: WebElement
    output_text: str = ""
    error_outputs: int = 0
    images: list[dict[str, Any]] = field(default_factory=list)
    tables: int = 0


@dataclass(frozen=True)
class RunProgress:
    """How a Run All ended: seconds from the click, the prompts, the kernel's state."""

    seconds: float
    prompts: list[str]
    kernel: str

    @property
    def all_run(self) -> bool:
        return bool(self.prompts) and all(p.strip("[]: ").isdigit() for p in self.prompts)


class JupyterLabPage:
    def __init__(self, driver: webdriver.Chrome, base: str, failure_shots: Path | None = None) -> None:
        self.driver = driver
        self.base = base.rstrip("/")
        #: where a failure's screenshot goes (diagnose); None: none taken
        self.failure_shots = failure_shots

    def open_notebook(self, path: str, token: str | None, timeout: float = 300, cells: int | None = None) -> None:
        """Open a notebook from its URL and wait until it is loaded (``cells`` cells in front: the
        panel shows a placeholder cell before the file's content arrives), it is JupyterLab's
        current document (the status bar names it: Run All and the status bar's kernel state are
        the current document's, and a tab restored in front is not always current) and its
        kernel is idle. A slow machine is waited for; what never happens fails with the page."""
        url = f"{self.base}/lab/tree/{path}" + (f"?token={token}" if token else "")
        name = path.rsplit("/", 1)[-1]
        self.driver.get(url)

        def loaded() -> bool:
            found = self.driver.find_elements(By.CSS_SELECTOR, f"{CURRENT} .jp-Notebook .jp-Cell")
            return bool(found) and (cells is None or len(found) == cells)

        def current() -> bool:
            if name in self.statusbar():
                return True
            # a click on the tab in front activates its document, as a student's click would
            for tab in self.driver.find_elements(By.CSS_SELECTOR, ".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current"):
                tab.click()
            return False

        self.wait_until(loaded, timeout, f"{path} did not load")
        self.wait_until(current, timeout, f"{path} did not become the current document")
        self.wait_until(lambda: self.kernel_status() == "idle", timeout, f"the kernel of {path} did not become idle")
        self.dismiss_news()
        self.hide_file_browser()

    def statusbar(self) -> str:
        return str(self.driver.execute_script(
            "return (document.querySelector('#jp-main-statusbar') || {}).innerText || '';"))

    def notebook_shown(self, seconds: float) -> bool:
        """Whether any notebook cell appears within ``seconds``."""
        try:
            self.wait_for(".jp-Notebook .jp-Cell", seconds)
            return True
        except TimeoutException:
            return False

    def wait_for(self, css: str, timeout: float) -> WebElement:
        return WebDriverWait(self.driver, timeout).until(lambda d: d.find_element(By.CSS_SELECTOR, css))

    def poll(self, cond: Callable[[], bool], timeout: float) -> bool:
        """Whether ``cond`` holds within ``timeout`` seconds (checked twice a second)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cond():
                    return True
            except StaleElementReferenceException:
                pass
            time.sleep(0.5)
        return False

    def wait_until(self, cond: Callable[[], bool], timeout: float, what: str) -> None:
        if not self.poll(cond, timeout):
            raise AssertionError(f"{what} within {timeout:.0f} s\n{self.diagnose()}")

    def kernel_status(self) -> str:
        """The kernel's state as the status bar shows it ("Python 3 (ipykernel) | Idle"):
        'idle', 'busy', 'connecting', ...; '' before a kernel is there."""
        for line in self.statusbar().splitlines():
            if " | " in line:
                return line.rsplit(" | ", 1)[1].strip().lower()
        return ""

    def hide_file_browser(self) -> None:
        """Collapse the file browser (a click on its current tab in the left bar, as a student
        would): the notebook gets the width in screenshots."""
        for tab in self.driver.find_elements(By.CSS_SELECTOR, ".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current"):
            tab.click()
            time.sleep(0.5)

    def dismiss_news(self) -> None:
        """Answer "No" to JupyterLab's first-start question about news, so that the toast does
        not cover the notebook in screenshots (what a student would do)."""
        for b in self.driver.find_elements(By.CSS_SELECTOR, ".jp-toast-button"):
            if b.text.strip() == "No":
                b.click()
                time.sleep(0.5)

    def menu(self, menu: str, command: str) -> None:
        """Click a menu of the menu bar, then the item running ``command`` (Lumino's data-command)."""
        css = f'.lm-Menu-item[data-command="{command}"]'
        for _ in range(3):
            # a click on the menu bar toggles: a menu left open by a previous click closes instead
            if not self.driver.find_elements(By.CSS_SELECTOR, css):
                items = self.driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
                target = next((i for i in items if i.text.strip() == menu), None)
                assert target is not None, f"no menu {menu!r} in {[i.text for i in items]}"
                target.click()
            try:
                # a menu opens in milliseconds, but a loaded machine can take seconds
                self.wait_for(css, 10).click()
                return
            except TimeoutException:
                continue
        raise AssertionError(f"menu {menu} > {command} did not open")

    def prompts(self) -> list[str]:
        """The input prompt of every code cell of the notebook in front: "[ ]:" never run,
        "[*]:" queued or running, "[7]:" run."""
        return [str(p).strip() for p in self.driver.execute_script(
            f"return [...document.querySelectorAll('{CURRENT} .jp-CodeCell .jp-InputPrompt')]"
            ".map(p => p.textContent);")]

    def run_all(self, stall: float = 300, cap: float = 1800) -> RunProgress:
        """Run > Run All Cells, then wait until the run is over, judged by what the page shows
        rather than by the clock: over when no prompt reads [*] and the kernel is idle, twice in
        a row. Run All stops at a cell that raises and leaves the cells after it at [ ]: that
        is over too (the caller sees the error). A loaded machine makes each cell slower, not
        the run stop: the wait fails only when no prompt has changed for ``stall`` seconds, or
        after ``cap`` seconds in all."""
        t0 = time.monotonic()
        before = self.prompts()
        self.menu("Run", "runmenu:run-all")
        # JupyterLab marks every queued cell [*] on the click, before the kernel does anything:
        # no mark and no new number means the click was lost (a menu closed under it); once more
        def started() -> bool:
            now = self.prompts()
            return now != before or "[*]:" in now

        if not self.poll(started, 30):
            self.menu("Run", "runmenu:run-all")
            self.wait_until(started, 60, "Run All Cells did not start (clicked twice)")
        last, changed, calm = self.prompts(), time.monotonic(), 0
        while True:
            time.sleep(1)
            now = time.monotonic()
            try:
                prompts, status = self.prompts(), self.kernel_status()
            except StaleElementReferenceException:
                continue
            if prompts != last:
                last, changed = prompts, now
            calm = calm + 1 if status == "idle" and "[*]:" not in prompts else 0
            if calm >= 2:
                return RunProgress(now - t0, prompts, status)
            if now - changed > stall:
                raise AssertionError(f"the notebook's run made no progress for {stall:.0f} s "
                                     f"({now - t0:.0f} s after Run All)\n{self.diagnose()}")
            if now - t0 > cap:
                raise AssertionError(f"the notebook did not finish running within {cap:.0f} s\n{self.diagnose()}")

    def diagnose(self) -> str:
        """What the page shows, for a failure message: kernel state, every prompt, the last
        lines of the output of the cell in progress or of the last one run."""
        try:
            prompts = self.prompts()
            status = self.kernel_status()
            tail = str(self.driver.execute_script(f"""
                const cells = [...document.querySelectorAll('{CURRENT} .jp-CodeCell')];
                const prompt = c => (c.querySelector('.jp-InputPrompt') || {{}}).textContent || '';
                const busy = cells.find(c => prompt(c) === '[*]:');
                const done = cells.filter(c => /\\[\\d+\\]/.test(prompt(c)));
                const c = busy || done[done.length - 1];
                if (!c) return '';
                const src = (c.querySelector('.cm-content') || {{}}).innerText || '';
                const out = [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText).join('\\n');
                return src.slice(0, 200) + '\\n--- output ---\\n' + out.slice(-1500);"""))
        except Exception as e:  # noqa: BLE001 (a diagnosis must not hide the failure it explains)
            return f"(page not readable: {e})"
        if self.failure_shots is not None:
            self.failure_shots.mkdir(parents=True, exist_ok=True)
            shot = self.failure_shots / f"failure-{time.strftime('%H%M%S')}.png"
            self.driver.save_screenshot(str(shot))
            tail += f"\nscreenshot: {shot}"
        return f"kernel: {status or 'no kernel shown'}; prompts: {' '.join(prompts)}\ncell: {tail}"

    def save(self) -> None:
        self.menu("File", "docmanager:save")
        # saved: the tab's dirty mark goes away
        self.wait_until(lambda: not self.driver.find_elements(
            By.CSS_SELECTOR, ".lm-TabBar-tab.lm-mod-current.jp-mod-dirty"), 120, "the notebook was not saved")

    def cells(self) -> list[CellView]:
        """Every cell with its source, prompt, and what its output area holds. Each cell is
        scrolled into view first: JupyterLab renders cells lazily off screen."""
        out = []
        elements = self.driver.find_elements(By.CSS_SELECTOR, f"{CURRENT} .jp-Notebook .jp-Cell")
        for i, el in enumerate(elements):
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", el)
            time.sleep(0.05)
            data = self.driver.execute_script("""
                const c = arguments[0];
                const src = c.querySelector('.cm-content');
                const imgs = [...c.querySelectorAll('.jp-OutputArea img')];
                return {
                  kind: c.classList.contains('jp-CodeCell') ? 'code' : 'markdown',
                  source: src ? src.innerText : '',
                  prompt: (c.querySelector('.jp-InputPrompt') || {}).textContent || '',
                  text: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText).join('\\n'),
                  errors: [...c.querySelectorAll('.jp-OutputArea [data-mime-type="STDERR_MIME"]')]
                          .filter(o => ERROR_RE.test(o.innerText)).length,
                  images: imgs.map(im => ({src: im.src.slice(0, 22), complete: im.complete,
                                          w: im.naturalWidth, h: im.naturalHeight})),
                  tables: c.querySelectorAll('.jp-OutputArea table').length,
                };""".replace("STDERR_MIME", STDERR_MIME).replace("ERROR_RE", ERROR_RE), el)
            out.append(CellView(i, data["kind"], data["source"], data["prompt"], el, data["text"],
                                data["errors"], data["images"], data["tables"]))
        return out

    def screenshot_cell(self, cell: CellView, path: Path, output_only: bool = False) -> Path:
        """The cell (or only its output area) as it is on screen, scrolled to the top of the view."""
        target = cell.element
        if output_only:
            outputs = cell.element.find_elements(By.CSS_SELECTOR, ".jp-Cell-outputWrapper")
            target = outputs[0] if outputs else target
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", target)
        time.sleep(0.3)
        path.parent.mkdir(parents=True, exist_ok=True)
        target.screenshot(str(path))
        return path

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))
        return path

    def scroll_to_top(self) -> None:
        cells = self.driver.find_elements(By.CSS_SELECTOR, f"{CURRENT} .jp-Notebook .jp-Cell")
        if cells:
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", cells[0])
            time.sleep(0.3)
