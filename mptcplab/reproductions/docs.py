"""Where the generated markdown goes: docs/reproductions.md whole, and each lab's doc
(docs/labs/<lab>.md) between its markers, the rest of the doc left as it is. ``expected``
says what every file should hold; ``write`` puts it there, ``check`` lists the files that
hold something else."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .collect import Reproduction, lab_names, reproductions
from .render import cases_doc_block, lab_doc_block, reproductions_md

BEGIN = "<!-- reproductions:begin -->"
END = "<!-- reproductions:end -->"
#: a lab doc's markers for the cases view instead (cases.py: case x kernel, one line per case)
CASES_BEGIN = "<!-- reproductions:cases:begin -->"
CASES_END = "<!-- reproductions:cases:end -->"
#: what ``write`` appends to a lab's doc that has a record but no markers yet
APPENDED = "\n## Verdicts on record\n\n" + BEGIN + "\n" + END + "\n"


@dataclass
class Expected:
    #: each file and what it should hold
    files: dict[Path, str] = field(default_factory=dict)
    #: lab docs that have a record but no markers: ``write`` appends them, ``check`` fails
    unmarked: list[Path] = field(default_factory=list)
    #: what cannot be put right by writing (a lab with a record but no doc, markers out of order)
    problems: list[str] = field(default_factory=list)


def shown(p: Path) -> str:
    """A path as the docs and the messages show it: relative to the working directory when
    under it (the checkout, for `make reproductions`), else as it is."""
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def splice(text: str, block: str, begin: str = BEGIN, end: str = END) -> str | None:
    """``text`` with what lies between its markers replaced by ``block``; None unless each
    marker is there once, ``begin`` before ``end``."""
    if text.count(begin) != 1 or text.count(end) != 1:
        return None
    head, _, rest = text.partition(begin)
    if end not in rest:
        return None
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{block}{end}{tail}"


def cases_labs(labs: list[str], lab_docs: Path) -> set[str]:
    """The labs whose doc asks for the cases view (has CASES_BEGIN)."""
    return {lab for lab in labs if (d := lab_docs / f"{lab}.md").is_file()
            and CASES_BEGIN in d.read_text(encoding="utf-8")}


def expected(records: Path, out: Path, labs: Path) -> Expected:
    """What docs/reproductions.md (``out``) and the lab docs beside it (``out``'s
    directory/labs/<lab>.md) should hold for the records under ``records``."""
    found = reproductions(records, labs)
    return expected_from(found, records, out, labs)


def expected_from(found: list[Reproduction], records: Path, out: Path, labs: Path) -> Expected:
    names = sorted(set(lab_names(labs)) | {r.lab for r in found})
    lab_docs = out.parent / "labs"
    links = {lab: Path(os.path.relpath(lab_docs / f"{lab}.md", out.parent)).as_posix()
             for lab in names if (lab_docs / f"{lab}.md").is_file()}
    records_shown = shown(records).rstrip("/") + "/"
    cases = cases_labs(names, lab_docs)
    e = Expected({out: reproductions_md(names, found, links, records_shown, cases)})
    back = Path(os.path.relpath(out, lab_docs)).as_posix()
    for lab in names:
        doc = lab_docs / f"{lab}.md"
        on_record = any(r.lab == lab for r in found)
        if not doc.is_file():
            if on_record:
                e.problems.append(f"{shown(doc)}: no such file, while labs/{lab} has a record")
            continue
        text = doc.read_text(encoding="utf-8")
        if lab in cases:
            begin, end, block = CASES_BEGIN, CASES_END, cases_doc_block(lab, found, back, records_shown)
        else:
            begin, end, block = BEGIN, END, lab_doc_block(lab, found, back, records_shown)
        if begin not in text and end not in text:
            if on_record:
                e.unmarked.append(doc)
            continue
        new = splice(text, block, begin, end)
        if new is None:
            e.problems.append(f"{shown(doc)}: needs {begin} once, then {end} once")
            continue
        e.files[doc] = new
    return e


def differing(e: Expected) -> list[str]:
    """One line per file that does not hold what the records say it should."""
    lines = []
    for path, text in e.files.items():
        try:
            now = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            lines.append(f"{shown(path)}: missing; `make reproductions` writes it from the records")
            continue
        if now != text:
            lines.append(f"{shown(path)}: disagrees with the records; `make reproductions` rewrites it")
    lines += [f"{shown(d)}: labs/{d.stem} has a record but the doc has no {BEGIN} ... {END}"
              for d in e.unmarked]
    return lines + e.problems


def write(records: Path, out: Path, labs: Path) -> tuple[list[str], list[str]]:
    """Write every file that differs (appending markers to a lab doc that has none): (what
    was done, one line per file; the problems writing cannot solve)."""
    found = reproductions(records, labs)
    e = expected_from(found, records, out, labs)
    if e.unmarked:
        for d in e.unmarked:
            d.write_text(d.read_text(encoding="utf-8").rstrip("\n") + "\n" + APPENDED, encoding="utf-8")
        e = expected_from(found, records, out, labs)
    done = []
    for path, text in e.files.items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            done.append(f"{shown(path)}: unchanged")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        done.append(f"{shown(path)}: written")
    return done, e.problems
