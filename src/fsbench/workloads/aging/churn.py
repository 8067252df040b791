"""`churn` (after Geriatrix, Kadekodi et al., ATC'18): files created and deleted by
fsbench-engine until the filesystem reaches a target fullness, having written a multiple
of its size, with file sizes and directory depths from a named profile and a seed (the
profiles and the deletion rule: engine/README.md). `at` is the fraction of the volume
written so far (1.0: aged)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from fsbench.system import engine
from fsbench.workloads.aging.base import Recipe
from fsbench.workloads.base import Params, Scale, TrialContext

AGING_DIR = "aging"
CHURN = "churn"


class ChurnParams(Params):
    fullness: float = Field(
        default=0.8, gt=0, lt=1, description="fraction of the filesystem in use at the end"
    )
    written: float = Field(
        default=10.0,
        gt=0,
        le=1000,
        description="volume written while aging, in multiples of the filesystem's size",
    )
    profile: Literal["default", "small", "large"] = Field(
        default="default",
        description="file sizes and directory depths: default (desktop/server studies), "
        "small, large",
    )
    seed: int = Field(default=1, ge=0, description="seed of the file sizes, places, deletions")


class Churn(Recipe[ChurnParams]):
    name = "churn"
    summary = "files created and deleted to a target fullness, a multiple of the size written"
    unit = "written"
    scale_defaults = {
        Scale.TINY: {"written": 1.5},
        Scale.QUICK: {"written": 3.0},
        Scale.FULL: {"written": 10.0},
    }

    def missing(self) -> str | None:
        if engine.find_engine() is None:
            return f"{engine.ENGINE} not built: `make install` builds it (Rust >= 1.88)"
        return None

    def end(self, params: ChurnParams) -> float:
        return 1.0

    def tree(self, ctx: TrialContext) -> Path:
        return ctx.mountpoint / AGING_DIR / CHURN

    def advance(self, ctx: TrialContext, params: ChurnParams, to: float) -> dict[str, Any]:
        st = os.statvfs(ctx.mountpoint)
        size = st.f_blocks * st.f_frsize
        spec = {
            "schema": engine.SCHEMA,
            "dir": str(self.tree(ctx)),
            "seed": params.seed,
            "profile": params.profile,
            "fullness": params.fullness,
            "write_bytes": int(params.written * size * min(1.0, to)),
        }
        out = engine.churn(spec, timeout=24 * 3600)
        return {
            "written_bytes": out.get("written_bytes"),
            "created": out.get("created"),
            "deleted": out.get("deleted"),
            "files": out.get("files"),
            "live_bytes": out.get("live_bytes"),
            "enospc_events": out.get("enospc_events"),
            "reached": out.get("reached"),
            "filesystem_bytes": size,
        }
