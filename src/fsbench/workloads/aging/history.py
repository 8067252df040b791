"""A deterministic git history to age a filesystem with, when the user has no repository
of their own to replay: the source tree of the kernel-tree workloads as the first commit,
then one commit per pull, each changing the tree the way a pull into Linux mainline does.

What a pull changes (drawn per pull from a seeded generator; the numbers follow the
shape of the Linux history that Conway et al. replayed, FAST'17):

- it works in one subsystem: a directory drawn at random, from which 70% of the files it
  touches come (the rest from anywhere in the tree), as a maintainer's pull does;
- files modified: log-normal, median 12, sigma 1.2 (most pulls touch a handful of files,
  a few touch hundreds), capped at 2% of the tree;
- files added: Poisson, mean 1.5, in the subsystem, sized like the tree's files;
- files deleted: Poisson, mean 0.5; files renamed (moved within the subsystem): Poisson,
  mean 0.4;
- a modified file's size changes by a log-normal factor (median 1.02, sigma 0.1): code
  grows slowly, and every modification rewrites the whole file on checkout, as git does.

The same seed, tree and number of pulls give the same commits, byte for byte, and so the
same commit ids (fixed authors and dates): a history is named by what made it and cached.
"""

from __future__ import annotations

import math
import random
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SUBSYSTEM_SHARE = 0.7
MODIFIED_MEDIAN = 12
MODIFIED_SIGMA = 1.2
MODIFIED_MAX_SHARE = 0.02
ADDED_MEAN = 1.5
DELETED_MEAN = 0.5
RENAMED_MEAN = 0.4
GROWTH_MEDIAN = 1.02
GROWTH_SIGMA = 0.1
# 2010-01-01, one pull an hour: fixed dates make the commit ids a function of the seed.
EPOCH = 1_262_304_000
AUTHOR = b"fsbench <fsbench@localhost>"
# Words of "source code": content that compresses like code does in git's packs.
_WORDS = (
    b"static int struct void return unsigned long const char if else for while "
    b"case break goto err out lock unlock page inode dentry sb buf len size count "
    b"flags offset block extent journal alloc free list next prev node ret\n"
).split(b" ")


@dataclass(frozen=True)
class Pull:
    """What one pull changes: paths written (with their new size), deleted, renamed."""

    written: dict[str, int]
    deleted: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method: fine for the small means used here."""
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def plan_pulls(sizes: dict[str, int], pulls: int, seed: int) -> Iterator[Pull]:
    """The pulls of a history over a tree of `sizes` (path -> bytes), one by one; `sizes`
    is not changed."""
    rng = random.Random(f"fsbench-history:{seed}")
    tree = dict(sizes)
    paths = sorted(tree)
    dirs = sorted({p.rpartition("/")[0] for p in paths})
    all_sizes = sorted(tree.values()) or [4096]
    serial = 0
    for _ in range(pulls):
        subsystem = rng.choice(dirs) if dirs else ""
        inside = [p for p in paths if p.startswith(subsystem + "/")] if subsystem else paths
        cap = max(1, int(len(paths) * MODIFIED_MAX_SHARE))
        n_mod = min(
            cap, max(1, round(rng.lognormvariate(math.log(MODIFIED_MEDIAN), MODIFIED_SIGMA)))
        )
        touched: dict[str, int] = {}
        for _ in range(n_mod):
            pool = inside if inside and rng.random() < SUBSYSTEM_SHARE else paths
            if not pool:
                break
            path = rng.choice(pool)
            before = touched.get(path, tree[path])
            growth = rng.lognormvariate(math.log(GROWTH_MEDIAN), GROWTH_SIGMA)
            touched[path] = max(1, round(before * growth))
        deleted: list[str] = []
        for _ in range(_poisson(rng, DELETED_MEAN)):
            pool = [p for p in (inside or paths) if p not in touched and p not in deleted]
            if len(pool) > 1:
                deleted.append(rng.choice(pool))
        renamed: list[tuple[str, str]] = []
        for _ in range(_poisson(rng, RENAMED_MEAN)):
            pool = [p for p in (inside or paths) if p not in touched and p not in deleted]
            pool = [p for p in pool if p not in {a for a, _ in renamed}]
            if pool:
                moved = rng.choice(pool)
                serial += 1
                head, _, name = moved.rpartition("/")
                new = f"{head}/r{serial:06d}-{name}" if head else f"r{serial:06d}-{name}"
                renamed.append((moved, new))
        for _ in range(_poisson(rng, ADDED_MEAN)):
            serial += 1
            where = subsystem or ""
            path = f"{where}/n{serial:06d}.c" if where else f"n{serial:06d}.c"
            touched[path] = rng.choice(all_sizes)
        for path in deleted:
            del tree[path]
        for moved, new in renamed:
            tree[new] = tree.pop(moved)
        tree.update(touched)
        paths = sorted(tree)
        yield Pull(dict(sorted(touched.items())), tuple(deleted), tuple(renamed))


def content(rng: random.Random, size: int) -> bytes:
    """`size` bytes of code-like text."""
    out = bytearray()
    while len(out) < size:
        out += rng.choice(_WORDS) + b" "
    return bytes(out[:size])


def write_history(bare: Path, tar_path: Path, top: str, pulls: int, seed: int) -> list[str]:
    """A bare repository at `bare` holding the tree as its first commit and `pulls`
    synthetic pulls after it, each on a branch of its own (`p0000` the tree, `p0001` the
    first pull...), made by `git fast-import`. Returns the commit ids in order."""
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    refs = [f"refs/heads/p{i:04d}" for i in range(pulls + 1)]
    proc = subprocess.Popen(
        ["git", "-C", str(bare), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        _stream(proc.stdin, tar_path, top, pulls, seed, refs)
        proc.stdin.write(b"done\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import: {err.strip().splitlines()[-1:] or proc.returncode}")
    out = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", *refs], check=True, capture_output=True, text=True
    )
    return out.stdout.split()


def _commit(out: IO[bytes], ref: str, i: int, message: str, parent: bool) -> None:
    when = f"{EPOCH + 3600 * i} +0000".encode()
    msg = message.encode()
    out.write(b"commit " + ref.encode() + b"\n")
    out.write(b"mark :%d\n" % (i + 1))
    out.write(b"author " + AUTHOR + b" " + when + b"\n")
    out.write(b"committer " + AUTHOR + b" " + when + b"\n")
    out.write(b"data %d\n" % len(msg) + msg + b"\n")
    if parent:
        out.write(b"from :%d\n" % i)  # the previous commit's mark


def _inline(out: IO[bytes], path: str, data: bytes) -> None:
    out.write(b"M 100644 inline " + path.encode() + b"\n")
    out.write(b"data %d\n" % len(data) + data + b"\n")


def _stream(
    out: IO[bytes], tar_path: Path, top: str, pulls: int, seed: int, refs: list[str]
) -> None:
    prefix = f"{top}/" if top else ""
    sizes: dict[str, int] = {}
    # The tree as it is, file by file from the archive.
    _commit(out, refs[0], 0, "the tree", parent=False)
    with tarfile.open(tar_path, "r:") as archive:
        for member in archive:
            if not member.isfile():
                continue
            f = archive.extractfile(member)
            data = f.read() if f else b""
            path = member.name.removeprefix(prefix)
            sizes[path] = len(data)
            _inline(out, path, data)
    out.write(b"\n")
    rng = random.Random(f"fsbench-history-content:{seed}")
    for i, pull in enumerate(plan_pulls(sizes, pulls, seed), start=1):
        _commit(out, refs[i], i, f"pull {i}", parent=True)
        for path in pull.deleted:
            out.write(b"D " + path.encode() + b"\n")
        for old, new in pull.renamed:
            out.write(b'R "' + old.encode() + b'" "' + new.encode() + b'"\n')
        for path, size in pull.written.items():
            _inline(out, path, content(rng, size))
        out.write(b"\n")
