"""`mptcplab analyze` draws its figures only with --figures (issue 33: importing and drawing
them took most of the command's time on small captures), and the figures' bars are drawn as
one path that looks as ax.vlines' bars did."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from PIL import Image

from mptcplab.analysis import pcapread
from mptcplab.results.figures import _bars

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = [DATA / "mptcp_pmtud_download__client_eth1.pcap", DATA / "mptcp_pmtud_download__client_eth2.pcap"]
# in a fresh interpreter: this test process has imported matplotlib already
SCRIPT = """
import sys
from mptcplab.cli import main
rc = main(sys.argv[1:])
print("matplotlib imported" if "matplotlib" in sys.modules else "matplotlib not imported")
sys.exit(rc)
"""


def analyze(*args: str) -> str:
    r = subprocess.run([sys.executable, "-c", SCRIPT, "analyze", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif(not pcapread.library_path().is_file(), reason="native capture reader not built")
def test_figures_only_on_request(tmp_path: Path) -> None:
    out = tmp_path / "a"
    text = analyze(*map(str, FILES), "--out", str(out))
    assert "matplotlib not imported" in text and "figures: not drawn (--figures draws them)" in text
    assert (out / "dsn.csv").is_file() and (out / "tcp_seq.csv").is_file() and not (out / "figures").exists()
    text = analyze(*map(str, FILES), "--out", str(out), "--figures")
    assert "matplotlib imported" in text and f"figures: {out / 'figures'}" in text
    names = {p.name for p in (out / "figures").glob("*.png")}
    assert names == {"dsn.png", "tcp_seq.png", "delivery.png", "resends.png", "throughput.png"}
    # the summary comes before the figures are drawn; a later run without them says the old ones are old
    assert text.index("tables:") < text.index("figures:")
    text = analyze(*map(str, FILES), "--out", str(out))
    assert "is from an earlier analysis" in text


def _png(draw: object) -> np.ndarray:
    fig = Figure(figsize=(5, 3))
    ax = fig.add_subplot()
    draw(ax)  # type: ignore[operator]
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return np.asarray(Image.open(buf).convert("L"), dtype=int)


def test_bars_draw_what_vlines_drew() -> None:
    rng = np.random.default_rng(33)
    t = pd.Series(np.sort(rng.random(300)))
    lo = pd.Series(rng.integers(0, 10_000, 300).astype(float))
    hi = lo + rng.integers(1, 3000, 300)
    theirs = _png(lambda ax: ax.vlines(t, lo, hi, color="tab:blue", lw=1.2))
    ours = _png(lambda ax: _bars(ax, t, lo, hi, color="tab:blue", lw=1.2))
    assert (theirs < 200).sum() > 1000                   # something was drawn
    assert np.abs(theirs - ours).max() <= 40             # and the same thing
