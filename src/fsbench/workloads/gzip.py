"""gzip: compress one file of `size` on the filesystem into another on the filesystem
(`gzip -c`, its stdout a file we open: no shell), as the classic suites' gzip test.

The input, written by `prepare` (untimed), is deterministic and realistic: 1 MiB chunks
alternating between random bytes (incompressible) and text (words from a seeded
vocabulary, compressible about 3:1), so gzip does real work on both kinds of data.

The cache is COLD: the runner syncs and drops caches after `prepare`, so the input is
read from the filesystem (read path, readahead) rather than from the page cache that
`prepare` filled just by writing it; the runner flags `not-cold` when the device read
much less than the input. gzip is CPU bound here (~27 MB/s at -6): the filesystem's share is the
read and the output write, which the runner's sync (inside `seconds`) puts on disk.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import Annotated

from pydantic import Field

from fsbench.system.units import Bytes
from fsbench.workloads import _tools
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric, Rate

DIRNAME = "gzip"
INPUT = "input.dat"
OUTPUT = "input.dat.gz"
CHUNK = 1 << 20
_MARGIN = 32 << 20
_TIMEOUT_BASE = 600.0
_SLOWEST_BYTES_PER_S = 1 << 20  # a hung gzip becomes a failed trial
_TEXT_POOL = 4 << 20  # text chunks are slices of a 4 MiB pool: no repeats within gzip's window


class GzipParams(Params):
    size: Annotated[Bytes, Field(gt=0, description="size of the input file compressed")]
    level: Annotated[
        int, Field(ge=1, le=9, description="compression level (-1 .. -9; gzip's default: 6)")
    ] = 6
    synchronous: bool = Field(
        default=False,
        description="gzip --synchronous: fdatasync the output before exiting (gzip's default: off)",
    )
    seed: int = Field(default=0, description="seed of the generated input (same seed, same data)")


def text_pool(rng: random.Random, size: int = _TEXT_POOL) -> bytes:
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10)))
        for _ in range(2000)
    ]
    lines: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choices(vocabulary, k=rng.randint(6, 14))) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:size]


def write_input(path: os.PathLike[str], size: int, seed: int) -> None:
    """Alternating 1 MiB chunks of random bytes and text, from a seeded generator."""
    rng = random.Random(seed)
    pool = text_pool(rng)
    with open(path, "wb") as f:
        done, i = 0, 0
        while done < size:
            n = min(CHUNK, size - done)
            if i % 2 == 0:
                chunk = rng.randbytes(n)
            else:
                off = rng.randrange(len(pool) - n + 1)
                chunk = pool[off : off + n]
            f.write(chunk)
            done += n
            i += 1


def argv(params: GzipParams, src: os.PathLike[str]) -> list[str]:
    args = ["gzip", "-c", f"-{params.level}"]
    if params.synchronous:
        args.append("--synchronous")
    return [*args, os.fspath(src)]


class Gzip(Workload[GzipParams]):
    name = "gzip"
    summary = "gzip: compress a file (half random, half text) on the filesystem into another: MB/s"
    scale_defaults = {
        Scale.TINY: {"size": "32M"},  # ~1.2 s here
        Scale.QUICK: {"size": "128M"},  # ~5 s here
        Scale.FULL: {"size": "2G"},  # the suites' 2 GB file
    }
    tools = (Tool("gzip", "gzip"),)
    cache = CacheState.COLD
    flush = Flush.SYNC
    headline = ("seconds", "mb_per_s")
    rates = (Rate("input_bytes", "mb_per_s", "MB/s", per=_tools.MB),)

    def required_bytes(self, params: GzipParams) -> int:
        # Output at most the input plus gzip's framing (random data does not shrink).
        return 2 * params.size + params.size // 100 + _MARGIN

    def prepare(self, ctx: TrialContext, params: GzipParams) -> None:
        d = ctx.mountpoint / DIRNAME
        d.mkdir(exist_ok=True)
        write_input(d / INPUT, params.size, params.seed)

    def run(self, ctx: TrialContext, params: GzipParams) -> list[Metric]:
        d = ctx.mountpoint / DIRNAME
        out = d / OUTPUT
        timeout = _TIMEOUT_BASE + params.size / _SLOWEST_BYTES_PER_S
        res = _tools.run_to_file(argv(params, d / INPUT), out, timeout=timeout)
        if not res.ok:
            raise _tools.tool_failed("gzip", res)
        out_bytes = out.stat().st_size
        return [
            Metric("input_bytes", params.size, "B", Better.HIGHER),
            Metric("output_bytes", out_bytes, "B", Better.LOWER),
            Metric("bytes_written", out_bytes, "B", Better.HIGHER),  # write amplification
            Metric("ratio", out_bytes / params.size, "ratio", Better.LOWER),
        ]

    def expected_read_bytes(self, params: GzipParams, metrics: Mapping[str, float]) -> float:
        return params.size  # the whole input, read cold
