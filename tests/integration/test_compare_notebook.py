"""notebooks/compare.ipynb executed headless, on campaign records kept in the repository
(restored into a temporary directory, as `make reproductions` does): the columns, the
paper beside them, every finding's verdict and the goodput figure, as `mptcplab compare`."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]


def _run(records: list[str], inputs: list[str]) -> tuple[str, int]:
    nb = nbformat.read(REPO / "notebooks" / "compare.ipynb", as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell.source += f"\ninputs = {inputs!r}\nrecords = {records!r}\n"
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outs = [o for c in nb.cells for o in c.get("outputs", [])]
    text = "".join(str(o.get("data", {}).get("text/markdown", "")) + str(o.get("text", "")) for o in outs)
    images = sum(1 for o in outs if "image/png" in o.get("data", {}))
    return text, images


def test_the_notebook_compares_the_records_of_a_lab() -> None:
    text, images = _run([str(REPO / "campaigns" / "records" / "setup-full")], [])
    assert "1 column(s) of 1 lab(s): `setup`: host (setup-full)" in text
    assert "## lab setup" in text and "### Columns" in text
    assert "F10.1-mptcp-slower" in text  # every finding with its verdict per column
    assert images == 1  # the goodput figure


def test_nothing_to_compare_is_said_not_raised() -> None:
    text, images = _run([], [])
    assert "Nothing to compare" in text and images == 0
