"""How many empty files fit, and is that number fixed when the filesystem is made?

Fills a fresh filesystem (1 GiB unless the settings say otherwise) with empty files, 1000
per directory, from two threads (the kernel's create path is the cost; os.open releases the
GIL), until ENOSPC, the cap, or the time limit. The inode table's size is read before and
after: statvfs f_files, and where the filesystem's own tool reports the number of inodes
allocated on disk (ext: dumpe2fs "Inode count"; xfs: the superblock's icount, read once
unmounted because xfs updates it lazily), that number too.
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
from dataclasses import dataclass

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup
from fsbench.store.features import Feature, Result

FILES = Feature(
    "inodes: files until full",
    "How many empty files can be created on a fresh filesystem of this size before ENOSPC?",
    quantity=True,
)
DYNAMIC = Feature(
    "inodes: allocated as needed",
    "Is the number of inodes not fixed at mkfs (inodes are allocated as files are created)?",
)


@dataclass(frozen=True)
class InodeCount:
    argv: tuple[str, ...]  # {dev} filled in; run on the unmounted device
    regex: str  # group 1: allocated inodes


# The filesystem's own count of inodes that exist on disk (used or not).
ALLOCATED: dict[str, InodeCount] = {
    "ext": InodeCount(("dumpe2fs", "-h", "{dev}"), r"^Inode count:\s+(\d+)"),
    "xfs": InodeCount(
        ("xfs_db", "-r", "-c", "sb 0", "-c", "print icount", "{dev}"), r"icount = (\d+)"
    ),
}

PER_DIR = 1000
THREADS = 2


@dataclass
class Fill:
    created: int = 0
    stop: str = ""  # why filling stopped
    seconds: float = 0.0


def fill(root: str, cap: int, seconds: float, cancelled: threading.Event | None = None) -> Fill:
    """Create empty files under `root` until ENOSPC, `cap` files or `seconds` elapse."""
    state = Fill()
    lock = threading.RLock()  # finish() is also called with it held
    halt = threading.Event()
    t0 = time.monotonic()
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC

    def finish(reason: str) -> None:
        with lock:
            if not state.stop:
                state.stop = reason
        halt.set()

    def worker(k: int) -> None:
        made = 0
        d = 0
        try:
            while not halt.is_set():
                if cancelled is not None and cancelled.is_set():
                    finish("interrupted")
                    break
                if time.monotonic() - t0 > seconds:
                    finish(f"time limit of {seconds:.0f} s")
                    break
                with lock:
                    if state.created + made >= cap:
                        state.created += made
                        made = 0
                        finish(f"cap of {cap:,} files")
                        break
                    state.created += made
                    made = 0
                path = os.path.join(root, f"t{k}d{d:06d}")
                os.mkdir(path)
                d += 1
                dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    for i in range(PER_DIR):
                        os.close(os.open(str(i), flags, 0o644, dir_fd=dfd))
                        made += 1
                finally:
                    os.close(dfd)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                finish("ENOSPC")
            else:
                finish(f"{errno.errorcode.get(exc.errno or 0, exc.errno)}: {exc.strerror}")
        finally:
            with lock:
                state.created += made

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state.seconds = time.monotonic() - t0
    return state


def _allocated(s: Scratch, ev: Evidence, when: str) -> int | None:
    how = ALLOCATED.get(s.family)
    if how is None:
        return None
    res = s.run(s.expand(how.argv), timeout=60)
    m = re.search(how.regex, res.stdout, re.MULTILINE)
    line = m.group(0) if m else (res.output.splitlines() or [f"exit {res.returncode}"])[0]
    ev.say(f"$ {' '.join(res.argv)}   ({when})\n{line}")
    return int(m.group(1)) if m else None


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    s.mkfs((), ev)
    before_alloc = _allocated(s, ev, "after mkfs")
    s.mount("", ev)
    st0 = os.statvfs(s.mnt)
    ev.say(f"statvfs before: f_files={st0.f_files} f_ffree={st0.f_ffree}")
    root = s.workdir("fill")
    cap = s.settings.inode_cap
    got = fill(str(root), cap, s.settings.inode_seconds, s.cancelled)
    s.check()
    st1 = os.statvfs(s.mnt)
    free_after = st1.f_bavail * st1.f_frsize
    rate = got.created / got.seconds if got.seconds else 0.0
    ev.say(
        f"created {got.created:,} empty files in {got.seconds:.1f} s ({rate:,.0f}/s), "
        f"stopped by {got.stop}"
    )
    ev.say(
        f"statvfs after: f_files={st1.f_files} f_ffree={st1.f_ffree}, "
        f"{free_after // (1 << 20)} MiB still available"
    )
    s.umount()
    after_alloc = _allocated(s, ev, "after filling, unmounted")
    size_mib = s.image_size >> 20
    if got.stop == "ENOSPC":
        note = f"ENOSPC on a {size_mib} MiB filesystem with {free_after >> 20} MiB still available"
        files = ev.result("yes", got.created, "files", note)
    else:
        note = f"at least: stopped by the {got.stop} on a {size_mib} MiB filesystem"
        files = ev.result("yes", got.created, "files", note)
    if st0.f_files == 0:
        dyn = ev.result(
            "yes", "no inode table", note="statvfs reports 0 inodes: allocated with files"
        )
    elif before_alloc is not None and after_alloc is not None:
        # Inodes on disk, as the filesystem's own tool counts them, before and after.
        if after_alloc > before_alloc:
            dyn = ev.result("yes", f"grows: {before_alloc:,} → {after_alloc:,}")
        else:
            dyn = ev.result("no", f"fixed at mkfs: {before_alloc:,}")
    elif st1.f_files != st0.f_files:
        dyn = ev.result("yes", f"f_files {st0.f_files:,} → {st1.f_files:,}")
    else:
        dyn = ev.result("no", f"fixed at mkfs: {st0.f_files:,}")
    return {FILES.name: files, DYNAMIC.name: dyn}


PROBE = Probe(
    name="inodes",
    features=(FILES, DYNAMIC),
    run=run,
    setup=Setup(key="inodes", managed=True, size=lambda st: st.inode_fs_size),
)
