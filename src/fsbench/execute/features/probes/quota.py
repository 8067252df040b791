"""Disk quotas, enforced: a 1 MiB limit is set, then 4 MiB are written (as uid 65534 for
user quotas: root is exempt); EDQUOT is a yes. Each family has recipes tried in order
(ext: the quota feature, then quota files with quotacheck/quotaon); the first that gets as
far as setting the limit decides."""

from __future__ import annotations

import os
from dataclasses import dataclass

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, complaint, known_for
from fsbench.store.features import Feature, Result
from fsbench.system import proc
from fsbench.system.errors import Unsupported

QUOTA = Feature(
    "quotas",
    "Is a disk quota enforced (a write past a 1 MiB limit fails with EDQUOT)?",
)

NOBODY = "65534"


@dataclass(frozen=True)
class Recipe:
    kind: str  # what the limit applies to
    mkfs: tuple[str, ...] = ()
    mount: str = ""
    prepare: tuple[tuple[str, ...], ...] = ()  # {mnt}; {dir}: the directory written to
    limit: tuple[tuple[str, ...], ...] = ()  # 1 MiB for uid 65534, or on {dir}'s tree
    as_user: bool = True  # write as uid 65534 (user quotas do not bind root)
    make_dir: bool = True  # else `prepare` makes {dir} (a btrfs subvolume)


_SETQUOTA = ("setquota", "-u", NOBODY, "0", "1024", "0", "0", "{mnt}")

RECIPES: dict[str, tuple[Recipe, ...]] = {
    "ext": (
        Recipe("user (quota feature)", mkfs=("-O", "quota"), mount="usrquota", limit=(_SETQUOTA,)),
        Recipe(
            "user (quota files)",
            mount="usrquota",
            prepare=(("quotacheck", "-cu", "{mnt}"), ("quotaon", "-u", "{mnt}")),
            limit=(_SETQUOTA,),
        ),
    ),
    "xfs": (
        Recipe(
            "user",
            mount="uquota",
            limit=(("xfs_quota", "-x", "-c", f"limit -u bhard=1m {NOBODY}", "{mnt}"),),
        ),
    ),
    "btrfs": (
        Recipe(
            "subvolume (qgroup)",
            prepare=(
                ("btrfs", "quota", "enable", "{mnt}"),
                ("btrfs", "subvolume", "create", "{dir}"),
                ("btrfs", "quota", "rescan", "-w", "{mnt}"),
            ),
            limit=(("btrfs", "qgroup", "limit", "1M", "{dir}"),),
            as_user=False,
            make_dir=False,
        ),
    ),
}

PACKAGES = {"setquota": "quota", "quotacheck": "quota", "quotaon": "quota", "setpriv": "util-linux"}
WRITE = ("dd", "if=/dev/zero", "of={dir}/fill", "bs=64K", "count=64", "conv=fsync")
AS_NOBODY = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


def _missing(argvs: list[list[str]]) -> str:
    for argv in argvs:
        if proc.which(argv[0]) is None:
            return f"{argv[0]} missing (apt-get install {PACKAGES.get(argv[0], argv[0])})"
    return ""


def attempt(s: Scratch, r: Recipe, ev: Evidence) -> tuple[str, str]:
    """('yes' | 'no' | 'skip', why); 'skip': this recipe could not be set up here."""
    d = s.mnt / "quota"
    values = {"dir": str(d)}
    setup = [s.expand(a, **values) for a in (*r.prepare, *r.limit)]
    write = s.expand((*AS_NOBODY, *WRITE) if r.as_user else WRITE, **values)
    missing = _missing([*setup, write])
    if missing:
        return "skip", missing
    ev.say(f"-- {r.kind}")
    try:
        s.mkfs(r.mkfs, ev)
        s.mount(r.mount, ev)
    except Unsupported as exc:
        return "skip", exc.message
    if r.make_dir:
        d.mkdir()
    for argv in setup:
        res = s.run(argv, ev, timeout=60)
        if not res.ok:
            return "skip", complaint(res)
    os.chmod(d, 0o1777)
    res = s.run(write, ev, timeout=60)
    if not res.ok and "quota" in res.output.lower():
        return "yes", ""
    if res.ok:
        return "no", "4 MiB written past a 1 MiB limit"
    return "skip", complaint(res)


def run(s: Scratch) -> dict[str, Result]:
    recipes = known_for(RECIPES, s, "quota recipe")
    ev = Evidence()
    reasons = []
    for r in recipes:
        verdict, why = attempt(s, r, ev)
        if verdict == "yes":
            return {QUOTA.name: ev.result("yes", r.kind)}
        if verdict == "no":
            return {QUOTA.name: ev.result("no", note=f"{r.kind}: {why}")}
        reasons.append(f"{r.kind}: {why}")
        s.umount()
    if all("missing (apt-get" in why for why in reasons):
        return {QUOTA.name: ev.result("n/a", note="; ".join(reasons))}
    return {QUOTA.name: ev.result("no", note="; ".join(reasons))}


PROBE = Probe(
    name="quota",
    features=(QUOTA,),
    run=run,
    setup=Setup(key="quota", managed=True),
)
