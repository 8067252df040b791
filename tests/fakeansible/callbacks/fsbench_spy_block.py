"""Ansible callback plugin of the tests (tests/fakeansible/spy.py enables it): the
ansible-playbook the spy marked ($FSBENCH_SPY_BLOCK_NOW) blocks at the end of its play,
after every task ran on every host and before Ansible exits and cleans up, having written
$FSBENCH_SPY_READY; the test then kills the controller while that call is in flight."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: fsbench_spy_block
type: notification
short_description: block a playbook at its end until a test kills it
description: Writes $FSBENCH_SPY_READY at the end of the play, then waits.
"""

_SPEC = importlib.util.spec_from_file_location(
    "fsbench_spy", Path(__file__).resolve().parents[1] / "spy.py"
)
assert _SPEC is not None and _SPEC.loader is not None
spy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(spy)


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "fsbench_spy_block"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats: Any) -> None:
        name = os.environ.get(spy.BLOCK_NOW, "")
        if name:
            spy.block(os.environ[spy.READY], name)
