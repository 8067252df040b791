"""Kernel log lines written during a window (a mount, a mkfs): read from /dev/kmsg."""

from __future__ import annotations

import errno
import os
import re

from fsbench.system.opened import Opened

_RECORD = re.compile(r"^\d+,\d+,\d+,[^;]*;(.*)$")


class KmsgWindow(Opened):
    """`with KmsgWindow() as k: mount(...)` then `k.lines` holds what the kernel said."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._fd: int | None = None

    def open(self) -> None:
        try:
            self._fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            self._fd = None  # no /dev/kmsg (container): no messages, not an error

    def read(self) -> list[str]:
        if self._fd is None:
            return self.lines
        while True:
            try:
                record = os.read(self._fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten records: skip on
                    continue
                break  # EAGAIN: nothing more
            if not record:
                break
            text = record.decode("utf-8", "replace").rstrip("\n")
            m = _RECORD.match(text.split("\n", 1)[0])
            if m:
                self.lines.append(m.group(1))
        return self.lines

    def close(self) -> None:
        """What came since open() is read; the window is closed."""
        self.read()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def about_device(lines: list[str], device: str) -> list[str]:
    """Kernel lines about this device, plus untagged ones (option parsing: `ext4: Unknown
    parameter`); lines tagged with another device (`EXT4-fs (vda): ...`) are dropped."""
    name = os.path.basename(device)
    out = []
    for line in lines:
        tag = re.search(r"\(([\w.-]+)\)", line)
        if tag is None or tag.group(1) == name or name in line:
            out.append(line)
    return out
