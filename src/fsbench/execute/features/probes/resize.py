"""Growing and shrinking, mounted and unmounted, each tried with the filesystem's own tool.

One filesystem on a 1 GiB image, with a 1 MiB file whose contents are checked at the end:
1. online grow: the image file grows by 512 MiB (`losetup -c`), the tool grows the mounted
   filesystem to the device; 2. online shrink: back by 512 MiB; 3. offline grow: the image
   grows again, the tool runs on the unmounted device; 4. offline shrink: by 512 MiB.
A step counts only if the tool succeeded *and* df's size moved the right way. When a
shrink by 512 MiB is refused, a shrink by 16 MiB is tried too (xfs can drop the free tail
of its last allocation group, experimentally) and reported in the note.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from fsbench.execute.features.base import (
    Evidence,
    MiB,
    Probe,
    Scratch,
    Setup,
    complaint,
    known_for,
    lacks_capability,
)
from fsbench.store.features import Feature, Result
from fsbench.system import numbers
from fsbench.system.errors import Unsupported

ONLINE_GROW = Feature("online grow", "Can the mounted filesystem be grown into a bigger device?")
ONLINE_SHRINK = Feature("online shrink", "Can the mounted filesystem be shrunk?")
OFFLINE_GROW = Feature("offline grow", "Can the unmounted filesystem be grown by its tools?")
OFFLINE_SHRINK = Feature("offline shrink", "Can the unmounted filesystem be shrunk by its tools?")

Argv = tuple[str, ...]


@dataclass(frozen=True)
class Tools:
    """argv templates: {dev}, {mnt}; for a shrink also {kib} (new size in KiB), {bytes} and
    {blocks} (in filesystem blocks)."""

    online_grow: tuple[Argv, ...]
    online_shrink: tuple[Argv, ...]
    offline_grow: tuple[Argv, ...]
    offline_shrink: tuple[Argv, ...]


TOOLS: dict[str, Tools] = {
    "ext": Tools(
        online_grow=(("resize2fs", "{dev}"),),
        online_shrink=(("resize2fs", "{dev}", "{kib}K"),),
        # resize2fs refuses an unchecked filesystem: e2fsck -f first, as its message asks.
        offline_grow=(("e2fsck", "-fy", "{dev}"), ("resize2fs", "{dev}")),
        offline_shrink=(("e2fsck", "-fy", "{dev}"), ("resize2fs", "{dev}", "{kib}K")),
    ),
    "xfs": Tools(
        online_grow=(("xfs_growfs", "{mnt}"),),
        online_shrink=(("xfs_growfs", "-D", "{blocks}", "{mnt}"),),
        offline_grow=(("xfs_growfs", "{dev}"),),
        offline_shrink=(("xfs_growfs", "-D", "{blocks}", "{dev}"),),
    ),
    "btrfs": Tools(
        online_grow=(("btrfs", "filesystem", "resize", "max", "{mnt}"),),
        online_shrink=(("btrfs", "filesystem", "resize", "{bytes}", "{mnt}"),),
        offline_grow=(("btrfs", "filesystem", "resize", "max", "{dev}"),),
        offline_shrink=(("btrfs", "filesystem", "resize", "{bytes}", "{dev}"),),
    ),
}

# Exit codes that mean success besides 0 (e2fsck: 1 = "errors corrected").
OK_CODES: dict[str, tuple[int, ...]] = {"e2fsck": (0, 1)}

STEP = 512 * MiB
SMALL_STEP = 16 * MiB


def _df_size(s: Scratch) -> int:
    st = os.statvfs(s.mnt)
    return st.f_blocks * st.f_frsize


class _Run:
    def __init__(self, s: Scratch, tools: Tools) -> None:
        self.s = s
        self.tools = tools
        self.fs_size = s.image_size  # what the filesystem spans, as far as we made it
        self.block = 4096

    def steps(self, argvs: tuple[Argv, ...], size: int, ev: Evidence) -> tuple[bool, str]:
        """Run a tool's steps; (all ok, the last failing tool's first line)."""
        values = {"kib": str(size // 1024), "bytes": str(size), "blocks": str(size // self.block)}
        for template in argvs:
            res = self.s.run(self.s.expand(template, **values), ev, timeout=300)
            if res.returncode not in OK_CODES.get(template[0], (0,)):
                return False, complaint(res)
        return True, ""

    def mounted_size(self, ev: Evidence) -> int | None:
        """Mount (if needed) and read df's size; None if the filesystem no longer mounts."""
        if not self.s.mounted:
            try:
                self.s.mount("", ev)
            except Unsupported as exc:
                ev.say(exc.message)
                return None
        return _df_size(self.s)

    def try_step(
        self,
        argvs: tuple[Argv, ...],
        target: int,
        online: bool,
        grow: bool,
        ev: Evidence,
    ) -> tuple[bool, str]:
        before = self.mounted_size(ev)
        if before is None:
            return False, "the filesystem did not mount before this step"
        if not online:
            self.s.umount()
        ok, said = self.steps(argvs, target, ev)
        after = self.mounted_size(ev)
        if after is None:
            return False, "the filesystem did not mount after the tool ran"
        ev.say(f"df size {numbers.exact_size(before)} → {numbers.exact_size(after)}")
        moved: Callable[[int, int], bool] = (lambda a, b: a > b) if grow else (lambda a, b: a < b)
        if ok and moved(after, before):
            self.fs_size = target
            return True, ""
        if ok:
            return False, f"the tool succeeded but df's size stayed {numbers.exact_size(after)}"
        return False, said


def _refused(ev: Evidence, said: str) -> Result:
    """A "no", unless the kernel said EPERM to a process without CAP_SYS_RESOURCE (a
    container's bounding set): ext4's online resize demands it, so nothing was learnt
    about the filesystem."""
    if "ermission denied" in said and lacks_capability("CAP_SYS_RESOURCE"):
        ev.say("this process lacks CAP_SYS_RESOURCE (see CapEff in /proc/self/status)")
        return ev.result(
            "n/a",
            "untestable here",
            note=f"{said}: this process lacks CAP_SYS_RESOURCE, so this cannot be measured here",
        )
    return ev.result("no", note=said)


def _grow(r: _Run, argvs: tuple[Argv, ...], online: bool) -> Result:
    ev = Evidence()
    new = r.s.image_size + STEP
    if not r.s.resize_image(new, ev):
        return ev.result("error", note="losetup -c could not resize the loop device")
    ok, said = r.try_step(argvs, new, online, grow=True, ev=ev)
    if ok:
        return ev.result(
            "yes", note=f"{numbers.exact_size(new - STEP)} → {numbers.exact_size(new)}"
        )
    return _refused(ev, said)


def _shrink(r: _Run, argvs: tuple[Argv, ...], online: bool) -> Result:
    ev = Evidence()
    target = r.fs_size - STEP
    ok, said = r.try_step(argvs, target, online, grow=False, ev=ev)
    if ok:
        return ev.result(
            "yes", note=f"{numbers.exact_size(target + STEP)} → {numbers.exact_size(target)}"
        )
    small = r.fs_size - SMALL_STEP
    ev.say(
        f"-- refused by {numbers.exact_size(STEP)}; "
        f"trying a shrink by {numbers.exact_size(SMALL_STEP)}"
    )
    ok_small, _ = r.try_step(argvs, small, online, grow=False, ev=ev)
    if ok_small:
        return ev.result(
            "no",
            "small shrinks only",
            note=f"{said}; a shrink by {numbers.exact_size(SMALL_STEP)} was accepted",
        )
    return _refused(ev, said)


def run(s: Scratch) -> dict[str, Result]:
    tools = known_for(TOOLS, s, "resize tool")
    setup = Evidence()
    s.mkfs((), setup)
    s.mount("", setup)
    r = _Run(s, tools)
    r.block = os.statvfs(s.mnt).f_bsize
    payload = os.urandom(MiB)
    (s.mnt / "keep").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    out = {
        ONLINE_GROW.name: _grow(r, tools.online_grow, online=True),
        ONLINE_SHRINK.name: _shrink(r, tools.online_shrink, online=True),
        OFFLINE_GROW.name: _grow(r, tools.offline_grow, online=False),
        OFFLINE_SHRINK.name: _shrink(r, tools.offline_shrink, online=False),
    }
    # Every "yes" is worth nothing if the data did not survive it.
    if r.mounted_size(Evidence()) is not None:
        kept = (s.mnt / "keep").read_bytes()
        if hashlib.sha256(kept).hexdigest() != digest:
            for name, res in out.items():
                if res.supported == "yes":
                    out[name] = res.model_copy(
                        update={"supported": "error", "note": "file contents changed by resizing"}
                    )
    return out


PROBE = Probe(
    name="resize",
    features=(ONLINE_GROW, ONLINE_SHRINK, OFFLINE_GROW, OFFLINE_SHRINK),
    run=run,
    setup=Setup(key="resize", managed=True),
)
