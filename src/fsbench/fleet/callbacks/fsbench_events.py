"""Ansible callback plugin: one JSON line per host and task result, appended to the file
named by $FSBENCH_EVENTS. fsbench's fleet controller reads it to know, per host, the
async job id, whether it finished, its exit status, its progress file and, for a host
that failed or could not be reached, Ansible's own one-line reason. Results of tasks
marked no_log arrive censored by Ansible and stay so."""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: fsbench_events
type: notification
short_description: JSON lines of task results for fsbench's fleet controller
description: Appends one JSON object per host and task result to $FSBENCH_EVENTS.
"""

KEEP = (
    "msg",
    "rc",
    "stdout",
    "stderr",
    "finished",
    "started",
    "ansible_job_id",
    "content",
    "failed",
    "unreachable",
    "censored",
    "dest",
    "size",
)
TEXT_LIMIT = 20000


class CallbackModule(CallbackBase):  # type: ignore[misc]
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "fsbench_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("FSBENCH_EVENTS", "")

    def _write(self, status: str, result: Any) -> None:
        if not self._path:
            return
        host = getattr(result, "host", None) or result._host
        task = getattr(result, "task", None) or result._task
        data = getattr(result, "result", None)
        if not isinstance(data, dict):
            data = result._result
        kept: dict[str, Any] = {}
        for key in KEEP:
            if key in data:
                value = data[key]
                if isinstance(value, str) and len(value) > TEXT_LIMIT:
                    value = value[-TEXT_LIMIT:]
                kept[key] = value
        line = {"host": host.get_name(), "task": task.get_name(), "status": status, **kept}
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, default=str) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._write("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._write("failed", result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._write("unreachable", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._write("skipped", result)
