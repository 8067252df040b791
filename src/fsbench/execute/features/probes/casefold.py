"""Case-insensitive names: made with the filesystem's casefold option where it has one
(ext4 `-O casefold` + `chattr +F` on a directory; xfs `-n version=ci`, ASCII only, whole
filesystem), tried with `chattr +F` elsewhere; then `CaseTest` is created and `casetest`
looked up."""

from __future__ import annotations

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup, complaint
from fsbench.store.features import Feature, Result

CASEFOLD = Feature(
    "case-insensitive names",
    "Can a directory look names up case-insensitively (CaseTest found as casetest)?",
)

MKFS = {"ext": ("-O", "casefold"), "xfs": ("-n", "version=ci")}


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    d = s.mnt / "casefold"
    d.mkdir()
    res = s.run(["chattr", "+F", str(d)], ev, timeout=30)
    flagged = res.ok
    (d / "CaseTest").write_text("x")
    found = (d / "casetest").exists()
    ev.say(f"created CaseTest; casetest {'found' if found else 'not found'}")
    if found:
        scope = "per directory (chattr +F)" if flagged else "whole filesystem"
        return {CASEFOLD.name: ev.result("yes", scope)}
    why = "names are case-sensitive" if flagged else f"chattr +F refused: {complaint(res)}"
    return {CASEFOLD.name: ev.result("no", note=why)}


PROBE = Probe(
    name="casefold",
    features=(CASEFOLD,),
    run=run,
    setup=Setup(key="casefold", mkfs=MKFS, refused="no"),
)
