"""Errors the CLI turns into one line and an exit status."""

from __future__ import annotations


class LabInputError(Exception):
    """Bad user input: a malformed lab file or an impossible parameter (exit status 2).

    The message is always one line naming the file, the field path and the problem.
    """

    exit_status = 2

    def __init__(self, file: str, field: str, problem: str) -> None:
        # one line, whatever a parser or a lab file put in the text
        file, field, problem = (" ".join(str(x).split()) if "\n" in str(x) or "\r" in str(x) else x
                                for x in (file, field, problem))
        self.file = file
        self.field = field
        self.problem = problem
        super().__init__(f"{file}: {field or '<top>'}: {problem}")


class HostNotReady(Exception):
    """The host lacks something a lab needs (a tool, a kernel feature); exit status 3."""

    exit_status = 3


class RunFailed(Exception):
    """A run could not produce valid measurements (exit status 1)."""

    exit_status = 1
