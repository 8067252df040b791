"""fio's parameters and its profiles: fsbench's own are records named in `BUILTIN`
("module:attribute", each a `Profile`: the contract is contract.py, the records
builtin.py), plugins are entry points of `fsbench.fio_profiles.v1` (system/plugins.py: one
registration style for every kind of plugin). A profile is looked up by its name, the
`profile` parameter; a job file (`job=PATH`) is none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from fsbench.system.plugins import Registry
from fsbench.system.units import Bytes
from fsbench.workloads.base import Params
from fsbench.workloads.fio import builtin
from fsbench.workloads.fio.contract import MIB, Phase, Profile, Sizes
from fsbench.workloads.fio.tool import Where

# The profile contract's version (contract.py): a plugin built for another is refused.
CONTRACT = 1
BUILTIN: tuple[str, ...] = tuple(
    f"fsbench.workloads.fio.builtin:{name}"
    for name in ("SEQ_WRITE", "SEQ_WRITE_DIRECT", "SEQ_READ", "RAND_RW", "THREADED")
)
REGISTRY: Registry[Profile] = Registry("fio_profiles", "fio profile", CONTRACT, BUILTIN)
# The shipped profiles' names, for defaults and tests (each said once, in its record).
SEQ_WRITE = builtin.SEQ_WRITE.name
SEQ_WRITE_DIRECT = builtin.SEQ_WRITE_DIRECT.name
SEQ_READ = builtin.SEQ_READ.name
RAND_RW = builtin.RAND_RW.name
THREADED = builtin.THREADED.name
JOB_PREFIX = "job="
# Each thread of a per-thread-file profile gets at least this much to work on.
MIN_PER_THREAD = MIB


def names() -> tuple[str, ...]:
    """Every profile's name, the shipped ones first."""
    return tuple(REGISTRY.all())


def get(name: str) -> Profile:
    return REGISTRY.get(name)


class FioParams(Params):
    profile: str = Field(
        default=SEQ_WRITE,
        description=f"a built-in profile ({', '.join(names())}) or job=/path/to/file.fio",
    )
    size: Annotated[
        Bytes,
        Field(
            gt=0,
            description="the data set: the file of seq-write/seq-read/rand-rw, shared out "
            "among the threads' files of seq-* and threaded-io (job files: their own)",
        ),
    ]
    runtime: Annotated[
        int,
        Field(
            ge=1,
            le=86400,
            description="seconds of each time-based phase (rand-rw, threaded-io's random phases)",
        ),
    ]
    threads: Annotated[
        int, Field(ge=1, le=1024, description="fio jobs (threads) running at once")
    ] = 1
    scale_to_mem: float | None = Field(
        default=None,
        gt=0,
        le=1024,
        description="the data set as a multiple of the memory the workload may use (the mem "
        "knob's cap, else the machine's RAM), in place of size: 0.5 fits in the page cache, "
        "2 and 4 do not",
    )

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value.startswith(JOB_PREFIX) and value[len(JOB_PREFIX) :].strip():
            return value
        try:
            REGISTRY.get(value)  # a plugin of another contract: refused in one line
        except KeyError:
            raise ValueError(
                f"unknown fio profile {value!r}: one of {', '.join(names())}, or job=/path/file.fio"
            ) from None
        return value

    @model_validator(mode="after")
    def _enough_per_thread(self) -> FioParams:
        if self.scale_to_mem is not None and self.job_file is not None:
            raise ValueError(
                "scale_to_mem sizes a built-in profile's data set: a job file sizes its own"
            )
        if self.job_file is None and get(self.profile).per_thread_files:
            if self.size // self.threads < MIN_PER_THREAD:
                raise ValueError(
                    f"size {self.size} shared by {self.threads} threads leaves under 1 MiB each"
                )
        return self

    def for_memory(self, mem_bytes: int) -> FioParams:
        """`size` as scale_to_mem x mem_bytes (whole MiB) when scale_to_mem is set."""
        if self.scale_to_mem is None:
            return self
        size = max(MIB, int(self.scale_to_mem * mem_bytes) // MIB * MIB)
        return type(self).model_validate({**self.model_dump(), "size": size})

    @property
    def sizes(self) -> Sizes:
        return Sizes(self.size, self.threads, self.runtime)

    @property
    def job_file(self) -> Path | None:
        if self.profile.startswith(JOB_PREFIX):
            return Path(self.profile[len(JOB_PREFIX) :].strip())
        return None


def run_phases(profile: str, params: FioParams, where: Where) -> list[Phase]:
    """The timed fio runs of a profile, in order."""
    return get(profile).runs(params.sizes, where)


def layout_phase(profile: str, params: FioParams, where: Where) -> Phase | None:
    """The untimed run that writes the data a profile reads (or overwrites); None if it
    needs nothing."""
    return get(profile).layout(params.sizes, where)
