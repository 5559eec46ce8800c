"""notebooks/mobile.ipynb executed headless on labs/mobile's records kept in the repository
(campaigns/records/mobile-full, restored into temporary directories as `make reproductions`
does): the paths' capacity from the lab's traces and switches, the download per path and per
window, goodput and head-of-line delay per scenario, every finding's verdict."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]


def _run(records: str) -> tuple[str, int, list[str]]:
    nb = nbformat.read(REPO / "notebooks" / "mobile.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed stripped
    params = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    params[0].source += f"\nrecords = {records!r}\n"
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outs = [o for c in nb.cells for o in c.get("outputs", [])]
    text = "".join(str(o.get("data", {}).get("text/markdown", "")) + str(o.get("data", {}).get("text/plain", ""))
                   + str(o.get("text", "")) for o in outs)
    images = sum(1 for o in outs if "image/png" in o.get("data", {}))
    errors = [o["ename"] for o in outs if o.get("output_type") == "error"]
    return text, images, errors


def test_the_notebook_reads_the_kept_record_of_labs_mobile() -> None:
    text, images, errors = _run(str(REPO / "campaigns" / "records" / "mobile-full"))
    assert not errors
    assert "host (mobile-full)" in text and "`default` 5" in text and "valid True" in text
    # capacity from the lab: WiFi at 24.064 Mbit/s after the return, nothing in most of the outage
    assert "24.06" in text
    # the per-window table and the findings read the same metric: default's outage median
    assert "outage" in text and "default-download-flows-through-the-outage" in text
    for scenario in ("default", "backup", "backup-slowest", "dynamic-threshold"):
        assert scenario in text
    assert "HoL p99 ms, WiFi" in text and "chat block delay p99 ms" in text
    assert "does not hold" in text  # default-interactive-p99-under-1s on this record
    assert images == 3  # capacity, per-path throughput, per-scenario bars


def test_a_directory_without_records_of_the_lab_is_said_not_raised(tmp_path: Path) -> None:
    text, images, errors = _run(str(tmp_path))
    assert not errors
    assert "No record of labs/mobile" in text and "No record: no verdicts." in text
    assert images == 1  # the capacity comes from the lab alone
