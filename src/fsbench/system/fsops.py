"""Making, mounting and describing one filesystem, driven by the catalogue records.

A refusal by mkfs or by the kernel is `errors.Unsupported` carrying the tool's and the
kernel's own words; the caller records it and the matrix goes on.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fsbench.system import kmsg, mounts, proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.system.filesystems import FSBENCH_LABEL, FsType

# Options of the mount(8)/VFS layer: they appear in the per-mount field, or are no-ops.
_NOOP_MOUNT_WORDS = {"defaults", "auto", "noauto", "user", "nouser", "_netdev", "nofail"}


def split_options(options: str) -> list[str]:
    return [o.strip() for o in options.split(",") if o.strip()]


def _merge_extended(fs: FsType, user: list[str]) -> list[str]:
    """Add the catalogue's extended defaults (ext lazy init off) into the user's -E, since
    mke2fs keeps only the last -E it is given."""
    if not fs.extended_flag or not fs.extended_defaults:
        return list(user)
    flag = fs.extended_flag
    out: list[str] = []
    user_ext: list[str] = []
    i = 0
    while i < len(user):
        arg = user[i]
        if arg == flag and i + 1 < len(user):
            user_ext.extend(split_options(user[i + 1]))
            i += 2
            continue
        if arg.startswith(flag) and len(arg) > len(flag):
            user_ext.extend(split_options(arg[len(flag) :]))
        else:
            out.append(arg)
        i += 1
    user_keys = {e.split("=", 1)[0] for e in user_ext}
    merged = [f"{k}={v}" for k, v in fs.extended_defaults if k not in user_keys] + user_ext
    return [flag, ",".join(merged), *out]


def mkfs_argv(fs: FsType, options: list[str], device: str) -> list[str]:
    label = [fs.label_flag, FSBENCH_LABEL] if fs.label_flag else []
    return [*fs.mkfs, *fs.force, *label, *_merge_extended(fs, options), device]


@dataclass
class Made:
    argv: list[str]
    output: str
    seconds: float
    kernel: list[str] = field(default_factory=list)


# How mkfs.ext4 ("apparently in use by the system"), mkfs.xfs and mkfs.btrfs ("Device or
# resource busy") say that the device is held.
BUSY = ("Device or resource busy", "apparently in use by the system")


def mkfs(fs: FsType, options: list[str], device: str, timeout: float = 900) -> Made:
    argv = mkfs_argv(fs, options, device)
    t0 = time.monotonic()
    with kmsg.KmsgWindow() as window:
        res = proc.run(argv, timeout=timeout)
    seconds = time.monotonic() - t0
    kernel = kmsg.about_device(window.lines, device)
    if not res.ok:
        first = res.output.splitlines()[0] if res.output else f"exit {res.returncode}"
        if any(words in res.output for words in BUSY):
            # Held by something else for a moment (a mount namespace's copy of an old
            # mount, a udev probe): this trial failed; the options were never judged.
            raise TrialFailed(f"mkfs: the device is busy: {first}", detail=_detail(res, kernel))
        raise Unsupported(f"mkfs refused: {first}", detail=_detail(res, kernel))
    return Made(argv, res.output, seconds, kernel)


def _detail(res: proc.Result, kernel: list[str]) -> str:
    parts = [f"$ {shlex.join(res.argv)}", res.output]
    if kernel:
        parts.append("kernel: " + " | ".join(kernel))
    return "\n".join(p for p in parts if p)


def mount_argv(fs: FsType, device: str, mountpoint: Path, options: str) -> list[str]:
    argv = ["mount", "-t", fs.mount_type or fs.name]
    if options:
        argv += ["-o", options]
    return [*argv, device, str(mountpoint)]


def mount(fs: FsType, device: str, mountpoint: Path, options: str) -> Made:
    mountpoint.mkdir(parents=True, exist_ok=True)
    argv = mount_argv(fs, device, mountpoint, options)
    t0 = time.monotonic()
    with kmsg.KmsgWindow() as window:
        res = proc.run(argv, timeout=300)
    seconds = time.monotonic() - t0
    kernel = kmsg.about_device(window.lines, device)
    if not res.ok:
        # The kernel's own words say why (`ext4: Unknown parameter 'nomballoc'`); mount's
        # stderr only says "wrong fs type, bad option...".
        said = next((k for k in reversed(kernel) if "loop" not in k.split(":")[0]), "")
        first = res.output.splitlines()[0] if res.output else f"exit {res.returncode}"
        raise Unsupported(f"mount refused: {said or first}", detail=_detail(res, kernel))
    return Made(argv, res.output, seconds, kernel)


def umount(mountpoint: Path, attempts: int = 5) -> str | None:
    """Unmount; on a busy target retry, then lazy-umount. Returns a warning or None."""
    done = mounts.umount(mountpoint, attempts)
    if done.error:
        raise TrialFailed(f"cannot unmount {mountpoint}: {done.error}")
    if done.lazy:
        return f"{mountpoint} was busy ({done.busy}); lazily unmounted"
    return None


MountEntry = mounts.MountEntry


def mount_entries(mountinfo: Path = mounts.MOUNTINFO) -> list[MountEntry]:
    return mounts.read(mountinfo)


def mount_entry(mountpoint: Path) -> MountEntry | None:
    return mounts.entry_at(mountpoint)


def is_mounted(mountpoint: Path) -> bool:
    return mounts.is_mounted(mountpoint)


def geometry(fs: FsType, device: str) -> dict[str, str]:
    """Geometry and features as the filesystem's own tool reports them."""
    if not fs.geometry:
        return {}
    res = proc.run([*fs.geometry, device], timeout=60)
    if not res.ok:
        return {"error": res.output.splitlines()[0] if res.output else f"exit {res.returncode}"}
    parse = _GEOMETRY_PARSERS.get(fs.geometry_format, _parse_colon)
    return parse(res.stdout)


def _parse_colon(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            out.setdefault(key.strip(), value.strip())
    return out


def _parse_xfs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        head, sep, rest = line.partition("=")
        if not sep:
            continue
        if head.strip():
            section = head.strip()
        # The first value after "section =" may be a bare word ("version 2", "internal log").
        for key, value in re.findall(r"([A-Za-z][\w-]*)=([^\s,]+)", rest):
            out[f"{section}.{key}"] = value
    return out


def _parse_btrfs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z][\w.\[\]]*)\s+(.+)$", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
    return out


_GEOMETRY_PARSERS = {"colon": _parse_colon, "xfs": _parse_xfs, "btrfs": _parse_btrfs}


@dataclass(frozen=True)
class OptionNote:
    """An option asked for and not in force as asked."""

    option: str
    kind: str  # "ignored": the kernel or the tool says so; "not-shown": absent from mountinfo
    where: str  # "mount" | "mkfs"
    evidence: str

    def as_dict(self) -> dict[str, str]:
        return dict(asdict(self))


_IGNORED_PATTERNS = (
    r"[Ii]gnoring removed {opt} option",
    r"{opt}.*\b(ignored|deprecated|obsolete|removed)\b",
    r"\b(ignoring|ignored)\b.*\b{opt}\b",
)


def mount_option_notes(asked: str, effective: list[str], kernel: list[str]) -> list[OptionNote]:
    notes = []
    eff_keys = {o.split("=", 1)[0] for o in effective}
    for opt in split_options(asked):
        if opt in _NOOP_MOUNT_WORDS:
            continue
        key = opt.split("=", 1)[0]
        said = next(
            (
                line
                for line in kernel
                for pat in _IGNORED_PATTERNS
                if re.search(pat.format(opt=re.escape(key)), line)
            ),
            None,
        )
        if said:
            notes.append(OptionNote(opt, "ignored", "mount", f"kernel: {said}"))
        elif opt not in effective and key not in eff_keys:
            notes.append(
                OptionNote(
                    opt,
                    "not-shown",
                    "mount",
                    "absent from /proc/self/mountinfo (a default is often not shown)",
                )
            )
    return notes


def _asked_features(fs: FsType, options: list[str]) -> list[str]:
    feats: list[str] = []
    for i, arg in enumerate(options):
        if arg == "-O" and i + 1 < len(options):
            feats += split_options(options[i + 1])
        elif arg.startswith("-O") and len(arg) > 2:
            feats += split_options(arg[2:])
    return feats


def mkfs_feature_notes(
    fs: FsType, options: list[str], geometry_facts: dict[str, str], mkfs_output: str
) -> list[OptionNote]:
    """ext: features asked with -O and not on the filesystem (uninit_bg under metadata_csum)."""
    have_text = geometry_facts.get("Filesystem features")
    if have_text is None:
        return []
    have = set(have_text.split())
    notes = []
    for feat in _asked_features(fs, options):
        off = feat.startswith("^")
        name = feat.lstrip("^")
        if name == "none":
            continue
        if (name in have) == off:
            warning = next((w for w in mkfs_output.splitlines() if name in w), "")
            evidence = f"filesystem features: {have_text}"
            if warning:
                evidence += f"; mkfs: {warning}"
            notes.append(OptionNote(feat, "ignored", "mkfs", evidence))
    return notes
