"""Snapshots made by the filesystem itself (not by LVM or device-mapper below it)."""

from __future__ import annotations

from dataclasses import dataclass

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, complaint, known_for
from fsbench.store.features import Feature, Result

SNAPSHOT = Feature(
    "snapshots",
    "Can the filesystem snapshot a directory tree itself (the snapshot keeps the old data)?",
)


@dataclass(frozen=True)
class Recipe:
    volume: tuple[str, ...]  # make {vol}, the tree to snapshot
    snapshot: tuple[str, ...]  # snapshot {vol} as {snap}
    label: str


RECIPES: dict[str, Recipe] = {
    "btrfs": Recipe(
        volume=("btrfs", "subvolume", "create", "{vol}"),
        snapshot=("btrfs", "subvolume", "snapshot", "{vol}", "{snap}"),
        label="subvolume snapshot",
    ),
}


def run(s: Scratch) -> dict[str, Result]:
    hint = " (use LVM thin or dm-snapshot below it)"
    recipe = known_for(RECIPES, s, "snapshots of its own", hint)
    ev = Evidence()
    vol, snap = s.mnt / "snap-vol", s.mnt / "snap-copy"
    res = s.run(s.expand(recipe.volume, vol=str(vol), snap=str(snap)), ev)
    if not res.ok:
        return {SNAPSHOT.name: ev.result("no", note=complaint(res))}
    (vol / "file").write_text("before\n")
    res = s.run(s.expand(recipe.snapshot, vol=str(vol), snap=str(snap)), ev)
    if not res.ok:
        return {SNAPSHOT.name: ev.result("no", note=complaint(res))}
    (vol / "file").write_text("after\n")
    kept = (snap / "file").read_text() if (snap / "file").exists() else "(missing)"
    ev.say(f"file rewritten after the snapshot; the snapshot's copy reads {kept.strip()!r}")
    if kept == "before\n":
        return {SNAPSHOT.name: ev.result("yes", recipe.label)}
    return {SNAPSHOT.name: ev.result("no", note="the snapshot did not keep the old contents")}


PROBE = Probe(name="snapshot", features=(SNAPSHOT,), run=run, setup=Setup())
