"""Data checksums, measured: write a file, unmount, flip bytes of its data in the image
file, mount again and read it. A filesystem that checksums data refuses (EIO); one that
does not returns the damaged bytes. Whether it checksums its metadata is read from its own
geometry report (ext metadata_csum, xfs crc=1, btrfs csum_type)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, os_error
from fsbench.store.features import Feature, Result
from fsbench.system import fsops, kmsg

CHECKSUMS = Feature(
    "data checksums",
    "Is a flipped byte in file data detected on read (EIO) rather than returned?",
)


@dataclass(frozen=True)
class MetaCsum:
    key: str  # in fsops.geometry()
    regex: str  # matches when metadata is checksummed; group 1 (if any) names the algorithm


METADATA: dict[str, MetaCsum] = {
    "ext": MetaCsum("Filesystem features", r"\bmetadata_csum\b"),
    "xfs": MetaCsum("meta-data.crc", r"^1$"),
    "btrfs": MetaCsum("csum_type", r"\((\w+)\)"),
}

SIZE = 64 * 1024  # bigger than any inline-data limit, so the data has blocks of its own
CHUNK = 4 << 20


def find_on_device(image: str, needle: bytes) -> int | None:
    """Byte offset of `needle` in the image file, reading only its data regions."""
    fd = os.open(image, os.O_RDONLY)
    try:
        end = os.fstat(fd).st_size
        pos = 0
        while pos < end:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                return None  # no more data
            stop = os.lseek(fd, start, os.SEEK_HOLE)
            off = start
            while off < stop:
                buf = os.pread(fd, min(CHUNK, stop - off) + len(needle), off)
                i = buf.find(needle)
                if i >= 0:
                    return off + i
                off += CHUNK
            pos = stop
        return None
    finally:
        os.close(fd)


def _metadata(s: Scratch, ev: Evidence) -> str:
    how = METADATA.get(s.family)
    if how is None:
        return ""
    geo = fsops.geometry(s.fs, s.device)
    text = geo.get(how.key, "")
    m = re.search(how.regex, text)
    ev.say(f"{' '.join(s.fs.geometry)}: {how.key}: {text[:120]}")
    if not m:
        return ""
    return m.group(1) if m.groups() else "yes"


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    data = os.urandom(SIZE)
    path = s.workdir("csum") / "data"
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    s.umount()
    meta = _metadata(s, ev)
    at = find_on_device(str(s.image), data[:4096])
    if at is None:
        return {
            CHECKSUMS.name: ev.result("error", note="the file's data was not found on the device")
        }
    fd = os.open(s.image, os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(b ^ 0xFF for b in data[100:116]), at + 100)
        os.fsync(fd)
    finally:
        os.close(fd)
    ev.say(f"flipped 16 bytes of the file's data at device offset {at + 100}")
    s.mount("", ev)
    with kmsg.KmsgWindow() as window:
        try:
            got: bytes | OSError = path.read_bytes()
        except OSError as exc:
            got = exc
    said = [line for line in kmsg.about_device(window.lines, s.device) if "csum" in line.lower()]
    if said:
        ev.say("kernel: " + said[0])
    if isinstance(got, OSError):
        ev.say(f"read: {os_error(got)}")
        value = f"data + metadata ({meta})" if meta and meta != "yes" else "data + metadata"
        return {CHECKSUMS.name: ev.result("yes", value)}
    if got == data:
        return {CHECKSUMS.name: ev.result("error", note="the flipped bytes were not read back")}
    ev.say("read: succeeded and returned the damaged bytes")
    value = "metadata only" if meta else "none"
    return {CHECKSUMS.name: ev.result("no", value, note="damaged data returned silently")}


PROBE = Probe(name="checksums", features=(CHECKSUMS,), run=run, setup=Setup(key="checksums"))
