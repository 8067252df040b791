"""Safety of the suite itself: the disk that holds `/` is found, never assumed.

On this machine `/` is on the first virtio disk; on another one that disk may be a blank
scratch disk, which a refusal test would format if the refusal it expects did not come.
Tests that check the refusal of the root disk ask `root_disk()` instead of naming one.
"""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

from fsbench.execute.targets import devinfo


@cache
def root_disk() -> str | None:
    """The whole disk under `/` (/dev/sda for /dev/sda1), or None when `/` is on no block
    device (an overlay, tmpfs or network root): `findmnt -n -o SOURCE /`, resolved through
    symlinks (/dev/disk/by-uuid/..., /dev/mapper/...) and partitions to its disk; for a
    source that is no device node (btrfs subvolume, overlay), the device number of `/`."""
    source = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True, check=False
    ).stdout.strip()
    source = source.split("[", 1)[0]  # btrfs: /dev/sda2[/@root]
    kname = None
    if source.startswith("/dev/") and Path(source).is_block_device():
        kname = devinfo.kname_of_device(os.path.realpath(source))
    if kname is None:
        kname = devinfo.kname_of_devnum(devinfo.devnum_str(os.stat("/").st_dev))
    if kname is None:
        return None
    return f"/dev/{devinfo.whole_disk(kname)}"
