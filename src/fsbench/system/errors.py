"""Exceptions with a meaning for the user: each carries a one-line message."""


class FsbenchError(Exception):
    """A problem the user can fix (bad input, missing tool, unsafe device): one line, exit 2."""


class UnsafeDeviceError(FsbenchError):
    """A device that fsbench refuses to touch."""


class Unsupported(Exception):
    """The kernel or a tool refused this configuration: the cell is recorded `unsupported`."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class TrialFailed(Exception):
    """A step of a trial failed for a reason other than an unsupported option."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class TrialTimeout(TrialFailed):
    """The per-trial time limit passed: the tool hung or the trial is far too big."""
