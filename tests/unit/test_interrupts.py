"""A command's interrupts (session._Interrupts), with real signals sent to this process:
the first raises KeyboardInterrupt, one during the cleanup is held, and once the run has
ended on an interrupt a later one is ignored (the command is saying how to go on and
exits 130; a default SIGTERM there would kill it with -15 instead). A run that ended
without one gives the handlers back as they were."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from fsbench.execute.session import INTERRUPTS, _Interrupts


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _send(sig: signal.Signals) -> None:
    """A signal to this process: Python runs its handler before the next bytecode."""
    os.kill(os.getpid(), sig)


def test_hangup_then_term_interrupts_once_and_ignores_the_rest(handlers: None) -> None:
    for sig in INTERRUPTS:
        signal.signal(sig, signal.SIG_DFL)
    caught = _Interrupts()
    with pytest.raises(KeyboardInterrupt):
        with caught:
            try:
                _send(signal.SIGHUP)
            finally:
                _send(signal.SIGTERM)  # during the cleanup: held, not raised into it
    assert (caught.first, caught.held) == (signal.SIGHUP, [signal.SIGTERM])
    assert all(signal.getsignal(sig) == signal.SIG_IGN for sig in INTERRUPTS)
    _send(signal.SIGTERM)  # after the run: this process lives on


def test_a_run_that_was_not_interrupted_gives_the_handlers_back(handlers: None) -> None:
    for sig in INTERRUPTS:
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # started under nohup
    with _Interrupts() as caught:
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN  # nohup is kept
        assert signal.getsignal(signal.SIGTERM) == caught._caught
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
