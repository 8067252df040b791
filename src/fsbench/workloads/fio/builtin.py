"""The profiles fsbench ships (named in profiles.BUILTIN): their fio runs, as options."""

from __future__ import annotations

from functools import partial

from fsbench.workloads.fio.contract import (
    COMMON,
    MIB,
    TIMEOUT_SLACK,
    Phase,
    Profile,
    Sizes,
    o_direct,
    per_thread,
    placement,
    sized_timeout,
    timed,
)
from fsbench.workloads.fio.tool import Where


def _sequential(name: str, rw: str, direct: bool, sizes: Sizes, where: Where) -> list[Phase]:
    """IOzone-style: each thread's file in 1 MiB blocks; a write ends with an fsync inside
    fio's runtime (data on disk, as IOzone -e)."""
    per = per_thread(sizes, MIB)
    opts = [
        ("name", name),
        *COMMON,
        *placement(where, per_thread=per),
        ("rw", rw),
        ("bs", "1M"),
        ("size", str(per)),
        ("numjobs", str(sizes.threads)),
        # seq-write-direct: the filesystem's allocator and I/O path, no page cache.
        *(o_direct(where) if direct else []),
    ]
    if rw == "write":
        opts.append(("end_fsync", "1"))
    return [Phase("", tuple(opts), sized_timeout(sizes.size))]


def _layout(shared: bool, sizes: Sizes, where: Where) -> Phase:
    """The untimed run that writes the data a profile reads (or overwrites): the same
    files, written sequentially in 1 MiB blocks and fsynced."""
    per, threads = (sizes.size, 1) if shared else (per_thread(sizes, MIB), sizes.threads)
    opts = [
        ("name", "layout"),
        *COMMON,
        *placement(where, per_thread=None if shared else per),
        ("rw", "write"),
        ("bs", "1M"),
        ("size", str(per)),
        ("numjobs", str(threads)),
        ("end_fsync", "1"),
    ]
    return Phase("", tuple(opts), sized_timeout(sizes.size))


def _rand_rw(sizes: Sizes, where: Where) -> list[Phase]:
    """Random 16 KiB reads and writes, 50/50, O_DIRECT, every thread on one shared file."""
    opts = [
        ("name", RAND_RW.name),
        *COMMON,
        *placement(where, per_thread=None),
        ("rw", "randrw"),
        ("rwmixread", "50"),
        ("bs", RAND_RW.block_size),
        *o_direct(where),
        ("size", str(sizes.size)),
        ("numjobs", str(sizes.threads)),
        *timed(sizes.runtime),
    ]
    return [Phase("", tuple(opts), sizes.runtime + TIMEOUT_SLACK)]


def _threaded(sizes: Sizes, where: Where) -> list[Phase]:
    """tiobench-style: per thread a file, written, read, read at random and written at
    random, 4 KiB buffered; one fio run per phase, caches dropped in between."""
    per = per_thread(sizes, 4096)
    base = [
        *COMMON,
        *placement(where, per_thread=per),
        ("bs", THREADED.block_size),
        ("size", str(per)),
        ("numjobs", str(sizes.threads)),
    ]
    seq_t, rand_t = sized_timeout(sizes.size), sizes.runtime + sized_timeout(sizes.size)
    random = timed(sizes.runtime)
    return [
        Phase("seq_", (("name", "seq-write"), *base, ("rw", "write"), ("end_fsync", "1")), seq_t),
        Phase("seq_", (("name", "seq-read"), *base, ("rw", "read")), seq_t, True),
        Phase("rand_", (("name", "rand-read"), *base, ("rw", "randread"), *random), rand_t, True),
        Phase(
            "rand_",
            (("name", "rand-write"), *base, ("rw", "randwrite"), *random, ("end_fsync", "1")),
            rand_t,
            True,
        ),
    ]


# seq-write(-direct) allocates its files from nothing; threaded-io's first phase writes
# the files its later phases use: neither lays anything out.
SEQ_WRITE = Profile(
    "seq-write", "1M", partial(_sequential, "seq-write", "write", False), per_thread_files=True
)
SEQ_WRITE_DIRECT = Profile(
    "seq-write-direct",
    "1M",
    partial(_sequential, "seq-write-direct", "write", True),
    per_thread_files=True,
)
SEQ_READ = Profile(
    "seq-read",
    "1M",
    partial(_sequential, "seq-read", "read", False),
    partial(_layout, False),
    per_thread_files=True,
    reads_cold=True,
)
RAND_RW = Profile("rand-rw-16k-direct", "16k", _rand_rw, partial(_layout, True), time_based=True)
THREADED = Profile("threaded-io", "4k", _threaded, time_based=True, per_thread_files=True)
