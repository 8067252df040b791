"""A disk with a volatile write cache, after CrashMonkey: the kernel's dm-log-writes
records every write the filesystem makes, in the order the writes reach stable storage
(a write is logged once a flush covers it; a FUA write at once), with the flush and FUA
marks; a crash state is then the log replayed up to a flush point plus a random subset
of the writes the next flush would have made durable: what a disk that lost part of its
cache could show; or the whole log as the power cut left it (every write a flush or FUA
covered, none of those still waiting for one): what a disk that lost its whole cache
shows, and the only state of a filesystem mounted without barriers, which never flushes.

The pattern marks each acknowledgement in the log (`ack-N`, through the device-mapper
ioctl: no process per mark), so a state knows which acknowledged operations it must
hold: those marked before its flush point (a mark is logged after the flush that made
its operation durable).

The log's format is the kernel's (drivers/md/dm-log-writes.c): a super block at sector
0, then per entry one sector of header (sector, nr_sectors, flags, data_len; a mark's
text after it) followed by the written sectors. Stdlib only: this runs in the guest.
"""

from __future__ import annotations

import fcntl
import os
import random
import struct
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import proc

NAME = "fsbench-logwrites"
DEVICE = f"/dev/mapper/{NAME}"
MAGIC = 0x6A736677736872
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")
READY_MARK = "ready"
ACK_MARK = "ack-"  # a mark is one word: the kernel splits messages at spaces

# <linux/dm-ioctl.h>: struct dm_ioctl is 312 bytes; DM_TARGET_MSG is command 14.
_DM_IOCTL = struct.Struct("<3IIIIiIII Q128s129s7s")
_DM_TARGET_MSG = (3 << 30) | (_DM_IOCTL.size << 16) | (0xFD << 8) | 14
_BLKZEROOUT = 0x127F
_BLKGETSIZE64 = 0x80081272


def unavailable() -> str | None:
    """Why this guest cannot record writes, or None."""
    if proc.which("dmsetup") is None:
        return "no dmsetup in the guest"
    res = proc.run(["modprobe", "dm-log-writes"], timeout=60)
    if not res.ok:
        return f"the guest kernel has no dm-log-writes ({res.output.strip() or res.returncode})"
    return None


def size_bytes(device: str) -> int:
    fd = os.open(device, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, _BLKGETSIZE64, b"\0" * 8)
    finally:
        os.close(fd)
    return int(struct.unpack("<Q", buf)[0])


def start(origin: str, log: str) -> str:
    """The recording device over `origin`, its log on `log` (whose old super is wiped)."""
    fd = os.open(log, os.O_WRONLY)
    try:
        os.pwrite(fd, b"\0" * 4096, 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    table = f"0 {size_bytes(origin) // 512} log-writes {origin} {log}"
    # A job's guest runs no udev: libdevmapper makes the /dev/mapper node itself.
    os.environ["DM_DISABLE_UDEV"] = "1"
    res = proc.run(["dmsetup", "create", "--noudevsync", NAME, "--table", table], timeout=60)
    if not res.ok:
        raise RuntimeError(f"dmsetup create: {res.output.strip()}")
    return DEVICE


class Marker:
    """`mark TEXT` messages to the recording device, one ioctl each."""

    def __init__(self) -> None:
        self.fd = os.open("/dev/mapper/control", os.O_RDWR)

    def mark(self, text: str) -> None:
        message = struct.pack("<Q", 0) + f"mark {text}".encode() + b"\0"
        size = _DM_IOCTL.size + len(message)
        head = _DM_IOCTL.pack(4, 0, 0, size, _DM_IOCTL.size, 0, 0, 0, 0, 0, 0,
                              NAME.encode(), b"", b"")  # fmt: skip
        fcntl.ioctl(self.fd, _DM_TARGET_MSG, bytearray(head + message))


@dataclass(frozen=True)
class Entry:
    sector: int  # in the log's sector size
    sectors: int
    flags: int
    offset: int  # byte offset of the data in the log device
    mark: str = ""

    @property
    def durable_point(self) -> bool:
        return bool(self.flags & (FLUSH | FUA))


def read_log(path: str) -> tuple[int, list[Entry]]:
    """The sector size and the entries the super block vouches for."""
    with open(path, "rb") as fh:
        magic, version, count, sectorsize = SUPER.unpack(fh.read(SUPER.size))
        if magic != MAGIC:
            return 512, []
        entries = []
        offset = sectorsize
        for _ in range(count):
            fh.seek(offset)
            head = fh.read(sectorsize)
            sector, sectors, flags, data_len = ENTRY.unpack(head[: ENTRY.size])
            mark = ""
            if flags & MARK:
                mark = head[ENTRY.size : ENTRY.size + data_len].decode(errors="replace")
            offset += sectorsize
            entries.append(Entry(sector, sectors, flags, offset, mark))
            if not flags & (DISCARD | MARK):
                offset += sectors * sectorsize
    return sectorsize, entries


@dataclass
class State:
    """A crash state: entries [0, point] replayed, then `subset` of the writes after it."""

    point: int  # index of the flush (or FUA) entry
    subset: list[int]  # entry indexes after `point`, before the next flush
    pending: int  # writes after `point` the next flush would have made durable
    acked: int  # acknowledgements marked before `point`

    def as_dict(self) -> dict[str, int]:
        return {
            "flush_point": self.point,
            "kept_writes": len(self.subset),
            "pending_writes": self.pending,
            "acked_marks": self.acked,
        }


def choose(entries: list[Entry], rng: random.Random) -> State | None:
    """A flush point after the pattern's setup (the `ready` mark) and a random subset of
    the writes between it and the next flush, or the log's end (the cut itself: nothing
    after it); None when the pattern never got ready."""
    ready = next((i for i, e in enumerate(entries) if e.mark == READY_MARK), None)
    if ready is None:
        return None
    points = [i for i in range(ready, len(entries)) if entries[i].durable_point]
    end = len(entries) - 1
    if end not in points:
        points.append(end)
    point = rng.choice(points)
    pending = []
    for i in range(point + 1, len(entries)):
        e = entries[i]
        if e.flags & FLUSH:
            break
        if not e.flags & MARK:
            pending.append(i)
    subset = sorted(rng.sample(pending, rng.randrange(len(pending) + 1))) if pending else []
    acked = sum(1 for e in entries[: point + 1] if e.mark.startswith(ACK_MARK))
    return State(point, subset, len(pending), acked)


def replay(log: str, entries: list[Entry], sectorsize: int, state: State, target: str) -> None:
    """Write the state onto `target` (zeroed: a fresh disk)."""
    chosen = [*range(state.point + 1), *state.subset]
    with open(log, "rb") as src:
        fd = os.open(target, os.O_WRONLY)
        try:
            for i in chosen:
                e = entries[i]
                if e.flags & MARK or not e.sectors:
                    continue
                if e.flags & DISCARD:
                    _zero(fd, e.sector * sectorsize, e.sectors * sectorsize)
                    continue
                src.seek(e.offset)
                os.pwrite(fd, src.read(e.sectors * sectorsize), e.sector * sectorsize)
            os.fsync(fd)
        finally:
            os.close(fd)


def _zero(fd: int, start: int, length: int) -> None:
    """A discard replayed: the range reads as zeros (BLKZEROOUT; a file: zeros written)."""
    try:
        fcntl.ioctl(fd, _BLKZEROOUT, struct.pack("<QQ", start, length))
    except OSError:
        os.pwrite(fd, bytes(length), start)


def marked_acks(acks: list[dict[str, object]], state: State) -> list[dict[str, object]]:
    """The acknowledgements a state must hold: READY, then the first `state.acked` (the
    pattern marks them in the order it sends them)."""
    return acks[: state.acked + 1]


def scan_forget(device: str) -> None:
    """btrfs keeps every device it has seen by filesystem id: forget `device`, so the
    replayed copy (same id) is the one mounted."""
    if Path("/dev/btrfs-control").exists() and proc.which("btrfs"):
        proc.run(["btrfs", "device", "scan", "--forget", device], timeout=60)
