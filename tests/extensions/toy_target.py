"""A toy target kind, whole in this one file: the filesystems are made on a loop image in
RAM (/dev/shm), so that a comparison measures the filesystems' own code, not a disk.
Its spec says what it is and which flag it takes (`--ram-image-size`); its executor is the
local one with the image placed in RAM and described as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from fsbench.execute.executors.local import LocalExecutor
from fsbench.plan import targets
from fsbench.plan.targets import LoopTargetSpec


@targets.register
class RamImageSpec(LoopTargetSpec):
    """A loop image in RAM (/dev/shm): the filesystems' code without a disk under it."""

    kind: str = "ram-image"
    executor: ClassVar[str] = f"{__name__}:RamImageExecutor"
    image_size: int = Field(
        default=512 << 20,
        gt=0,
        description="Size of the RAM image.",
        json_schema_extra=targets.flag("ram-image-size"),
    )
    workdir: Path = Field(default=Path("/dev/shm/fsbench-toy"), description="Where it goes.")


class RamImageExecutor(LocalExecutor):
    def describe(self) -> dict[str, Any]:
        desc = super().describe()
        return {**desc, "kind": "ram-image", "summary": "a loop image in RAM: " + desc["summary"]}
