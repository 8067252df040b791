"""A toy target kind, whole in this one file: the filesystems are made on a loop image in
RAM (/dev/shm), so that a comparison measures the filesystems' own code, not a disk.
Its spec says what it is and which flag it takes (`--ram-image-size`); its executor, of
the same kind, is the local one with the image placed in RAM and described as such. Both
register themselves, as every plugin registers (a package would name them as entry points
of fsbench.targets.v1 and fsbench.executors.v1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from fsbench.execute.executors import EXECUTORS
from fsbench.execute.executors.local import LocalExecutor
from fsbench.plan import targets
from fsbench.plan.targets import LoopTargetSpec


@targets.register
class RamImageSpec(LoopTargetSpec):
    """A loop image in RAM (/dev/shm): the filesystems' code without a disk under it."""

    kind: str = "ram-image"
    image_size: int = Field(
        default=512 << 20,
        gt=0,
        description="Size of the RAM image.",
        json_schema_extra=targets.flag("ram-image-size"),
    )
    workdir: Path = Field(default=Path("/dev/shm/fsbench-toy"), description="Where it goes.")


@EXECUTORS.register
class RamImageExecutor(LocalExecutor):
    kind: ClassVar[str] = "ram-image"

    def describe(self) -> dict[str, Any]:
        desc = super().describe()
        return {**desc, "kind": "ram-image", "summary": "a loop image in RAM: " + desc["summary"]}
