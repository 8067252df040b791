"""A toy workload, whole in this one file: N small files written and fsync'd, then read
back after a remount. Registering it is all fsbench needs: plans, --set, the runner's
clock and checks, the store and every report take it from here."""

from __future__ import annotations

import os
import time
from typing import Annotated

from pydantic import Field

from fsbench.system.units import Bytes
from fsbench.workloads import register
from fsbench.workloads.base import Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric


class ToyParams(Params):
    files: int = Field(ge=1, description="files written")
    size: Annotated[Bytes, Field(gt=0, description="size of each file")]


@register
class ToyFiles(Workload[ToyParams]):
    name = "toy-files"
    summary = "N small files written with fsync, then read back cold (an extension example)"
    scale_defaults = {
        Scale.TINY: {"files": 200, "size": "4K"},
        Scale.QUICK: {"files": 2000, "size": "4K"},
        Scale.FULL: {"files": 20000, "size": "4K"},
    }
    headline = ("files_per_s",)

    def required_bytes(self, params: ToyParams) -> int:
        return params.files * max(params.size, 4096) * 2

    def run(self, ctx: TrialContext, params: ToyParams) -> list[Metric]:
        data = os.urandom(params.size)
        t0 = time.perf_counter()
        for i in range(params.files):
            fd = os.open(ctx.mountpoint / f"toy-{i}", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        seconds = time.perf_counter() - t0
        ctx.remount()
        t1 = time.perf_counter()
        read = sum(len((ctx.mountpoint / f"toy-{i}").read_bytes()) for i in range(params.files))
        return [
            Metric("files_per_s", params.files / seconds, "files/s", Better.HIGHER),
            Metric("read_seconds", time.perf_counter() - t1, "s", Better.LOWER),
            Metric("bytes_read", read, "B", Better.HIGHER),
        ]
