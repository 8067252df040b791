"""Targets on real loop devices: LoopImage, BlockDevice safety refusals, stale cleanup.

Every test works in a private directory under /var/tmp; the `scratch` fixture unmounts
everything below it and detaches every loop device backed by a file in it, even when a
test fails, so nothing leaks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fsbench.execute.runner import Runner, cache_root, mount_root
from fsbench.execute.targets import devinfo, stale
from fsbench.execute.targets.blockdev import BlockDevice
from fsbench.execute.targets.loop import LoopImage, attached_loops
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.system.errors import FsbenchError, TrialFailed, UnsafeDeviceError
from fsbench.system.filesystems import FSBENCH_LABEL
from fsbench.workloads.base import Scale
from tests.safety import root_disk

MiB = 1 << 20

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for loop devices"),
    pytest.mark.skipif(shutil.which("losetup") is None, reason="needs losetup"),
]


def run(*argv: str) -> str:
    cp = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=120)
    assert cp.returncode == 0, f"{' '.join(argv)}: {cp.stderr.strip()}"
    return cp.stdout


def loops_backed_under(top: Path) -> list[str]:
    prefix = str(top) + "/"
    found = []
    for path in sorted(devinfo.SYS_BLOCK.iterdir()):
        back = devinfo.loop_backing_file(path.name)
        if back and back.startswith(prefix):
            found.append(f"/dev/{path.name}")
    return found


def sweep(top: Path) -> None:
    """Release everything under `top`: mounts (deepest first), then loop devices."""
    for _ in range(3):
        for entry in devinfo.mounts_under(top):
            devinfo.unmount(entry.mountpoint)
        for dev in loops_backed_under(top):
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        if not devinfo.mounts_under(top) and not loops_backed_under(top):
            break
        time.sleep(0.2)


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="fsbench-targets-", dir="/var/tmp"))
    try:
        yield path
    finally:
        sweep(path)
        shutil.rmtree(path, ignore_errors=True)


Attach = Callable[..., str]


@pytest.fixture
def attach(scratch: Path) -> Attach:
    """attach(size, name=..., partscan=False, mbr=False) -> /dev/loopN of a fresh image."""
    counter = [0]

    def factory(size: int = 16 * MiB, *, partscan: bool = False, mbr: bool = False) -> str:
        counter[0] += 1
        image = scratch / f"disk{counter[0]}.img"
        with image.open("wb") as f:
            f.truncate(size)
        if mbr:
            write_mbr(image, start=2048, sectors=(size // 512) - 4096)
        argv = ["losetup", "--find", "--show"] + (["-P"] if partscan else []) + [str(image)]
        return run(*argv).strip()

    return factory


def write_mbr(image: Path, start: int, sectors: int) -> None:
    """A dos partition table with one Linux partition (no sfdisk needed)."""
    mbr = bytearray(512)
    mbr[440:444] = b"\xfb\x5e\x00\x01"  # disk signature
    mbr[446:462] = struct.pack(
        "<B3sB3sII", 0, b"\xff\xff\xff", 0x83, b"\xff\xff\xff", start, sectors
    )
    mbr[510:512] = b"\x55\xaa"
    with image.open("r+b") as f:
        f.write(mbr)


def add_partitions(dev: str) -> str:
    """Make the kernel show the partitions of `dev` (partx: works without kernel partition
    parsers too) and return the first partition's node."""
    subprocess.run(["partx", "-a", dev], capture_output=True, check=False)
    part = f"{dev}p1"
    deadline = time.monotonic() + 5
    while not Path(part).exists():
        if time.monotonic() > deadline:
            pytest.skip(f"no partition node {part} appeared")
        time.sleep(0.05)
    return part


def mkfs_ext4(dev: str, label: str) -> None:
    run("mkfs.ext4", "-q", "-F", "-L", label, "-E", "lazy_itable_init=0,lazy_journal_init=0", dev)


def mount(dev: str, mnt: Path) -> None:
    mnt.mkdir(parents=True, exist_ok=True)
    run("mount", dev, str(mnt))
    run("sync", "-f", str(mnt))  # nothing pending: the checksums below stay stable


def edge_digest(dev: str) -> str:
    """SHA-256 of the first and the last MiB of a device (or file)."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        h = hashlib.sha256()
        h.update(os.pread(fd, MiB, 0))
        h.update(os.pread(fd, MiB, max(0, size - MiB)))
        return h.hexdigest()
    finally:
        os.close(fd)


def assert_refused(path: str, destroy_data: bool, *expected: str) -> str:
    """BlockDevice(path).open() must refuse with a one-line message containing `expected`,
    and leave the first and last MiB of the device untouched."""
    real = os.path.realpath(path)
    before = edge_digest(real) if os.path.exists(real) else None
    target = BlockDevice(path, destroy_data=destroy_data)
    with pytest.raises(UnsafeDeviceError) as info:
        target.open()
    msg = str(info.value)
    assert "\n" not in msg
    for text in expected:
        assert text in msg, msg
    if before is not None:
        assert edge_digest(real) == before
    return msg


# -- LoopImage ---------------------------------------------------------------------


def test_loop_image_open_close_leaves_nothing(scratch: Path) -> None:
    target = LoopImage(scratch / "work", 64 * MiB)
    target.open()
    try:
        image = target.image
        assert image is not None and image.name == f"fsbench-{os.getpid()}.img"
        assert image.parent == scratch / "work"
        dev = target.device
        assert Path(dev).is_block_device()
        assert attached_loops(image) == [dev]
        assert dev in run("losetup", "-a")
        assert target.size_bytes == 64 * MiB
        assert int(run("blockdev", "--getsize64", dev)) == 64 * MiB
    finally:
        target.close()
    assert not image.exists()
    assert attached_loops(image) == []
    assert devinfo.loop_backing_file(Path(dev).name) != str(image)
    assert str(image) not in run("losetup", "-a")
    target.close()  # idempotent
    assert list((scratch / "work").iterdir()) == []


def test_loop_image_is_sparse_and_reset_punches_holes(scratch: Path) -> None:
    with LoopImage(scratch, 64 * MiB) as target:
        assert isinstance(target, LoopImage) and target.image is not None
        assert target.image.stat().st_size == 64 * MiB
        assert target.image.stat().st_blocks * 512 < MiB  # sparse
        fd = os.open(target.device, os.O_WRONLY)
        try:
            os.pwrite(fd, os.urandom(4 * MiB), 8 * MiB)
            os.fsync(fd)
        finally:
            os.close(fd)
        assert target.image.stat().st_blocks * 512 >= 4 * MiB
        assert target.describe()["discard"] == "not tried"
        assert target.reset() == "ok"
        assert target.image.stat().st_blocks * 512 < MiB
        assert target.describe()["discard"] == "ok"  # the last one
    assert loops_backed_under(scratch) == []


def test_a_loop_device_detached_under_the_run_is_never_discarded(
    scratch: Path, attach: Attach
) -> None:
    """Someone detaches the run's loop device and the next free one serves another image
    (often under the same name): the run's reset refuses in one line and the other image
    keeps every byte; must not fire: a device that still serves the run's image resets."""
    with LoopImage(scratch, 16 * MiB) as target:
        assert target.reset() == "ok"
        mine = target.device
        subprocess.run(["losetup", "-d", mine], check=True)
        theirs = attach(16 * MiB)
        data = os.urandom(MiB)
        fd = os.open(theirs, os.O_WRONLY)
        try:
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        with pytest.raises(TrialFailed, match=f"{mine} no longer serves .*not touched"):
            target.reset()
        with open(theirs, "rb") as dev:
            assert dev.read(MiB) == data
    assert loops_backed_under(scratch) != [] and theirs in loops_backed_under(scratch)


def test_loop_image_describe(scratch: Path) -> None:
    with LoopImage(scratch, 32 * MiB) as target:
        assert isinstance(target, LoopImage)
        d = target.describe()
        assert d["kind"] == "loop"
        assert d["image"] == str(scratch / f"fsbench-{os.getpid()}.img")
        assert d["size_bytes"] == 32 * MiB
        assert d["loop_device"] == target.device
        assert d["direct_io"] is True  # /var/tmp is a disk filesystem: O_DIRECT works
        fstype = run("findmnt", "-n", "-o", "FSTYPE", "-T", str(scratch)).strip()
        assert d["backing_fs"] == fstype
        assert d["backing_device"] is None or d["backing_device"].startswith("/dev/")
        if d["backing_device"]:
            assert isinstance(d["rotational"], bool)
            assert d["backing_model"] is None or isinstance(d["backing_model"], str)
        assert target.diskstats_name == Path(target.device).name
        assert Path(f"/sys/block/{target.diskstats_name}/stat").exists()
        assert devinfo.diskstats_path(target.diskstats_name).exists()


def test_loop_image_refuses_without_free_space(scratch: Path) -> None:
    target = LoopImage(scratch / "w", 1 << 50)  # 1 PiB
    with pytest.raises(FsbenchError) as info:
        target.open()
    msg = str(info.value)
    assert "\n" not in msg
    assert str(scratch / "w") in msg and "1024.0 TiB" in msg
    assert "--workdir" in msg and "--image-size" in msg
    assert list((scratch / "w").iterdir()) == []
    assert loops_backed_under(scratch) == []
    target.close()


def test_loop_image_without_direct_io_on_ramfs(scratch: Path) -> None:
    """ramfs refuses O_DIRECT: the image is attached buffered and describe() says so;
    it cannot punch holes either: reset() records that instead of failing."""
    ram = scratch / "ram"
    ram.mkdir()
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", str(ram)], check=False).returncode:
        pytest.skip("cannot mount ramfs")
    target = LoopImage(ram, 16 * MiB)
    try:
        target.open()
        d = target.describe()
        assert d["direct_io"] is False
        assert d["backing_fs"] == "ramfs"
        said = target.reset()
        assert said.startswith("unsupported: ") and "cannot discard" in said
        assert target.describe()["discard"] == said
    finally:
        target.close()
    assert loops_backed_under(scratch) == []
    assert list(ram.iterdir()) == []


def test_loop_image_close_unmounts_its_own_device(scratch: Path) -> None:
    target = LoopImage(scratch, 32 * MiB)
    try:
        target.open()
        mkfs_ext4(target.device, FSBENCH_LABEL)
        mount(target.device, target.mount_dir())
    finally:
        target.close()
    assert devinfo.mounts_under(scratch) == []
    assert loops_backed_under(scratch) == []


# -- BlockDevice refusals ----------------------------------------------------------


def test_refuses_without_destroy_data(attach: Attach) -> None:
    dev = attach()
    assert_refused(dev, False, "--destroy-data", dev)


def test_refuses_missing_path(scratch: Path) -> None:
    assert_refused(str(scratch / "nope"), True, "no such device")


def test_refuses_regular_file(scratch: Path) -> None:
    path = scratch / "plain.img"
    path.write_bytes(os.urandom(3 * MiB))
    assert_refused(str(path), True, "not a block device", str(path))


def test_refuses_symlink_to_mounted_loop(scratch: Path, attach: Attach) -> None:
    dev = attach()
    mkfs_ext4(dev, FSBENCH_LABEL)  # its own label: only the mount stands in the way
    mount(dev, scratch / "m")
    link = scratch / "disk-link"
    link.symlink_to(dev)
    assert_refused(str(link), True, "mounted", str(link), dev, str(scratch / "m"))


def test_refuses_mounted_loop(scratch: Path, attach: Attach) -> None:
    dev = attach()
    mkfs_ext4(dev, FSBENCH_LABEL)
    mount(dev, scratch / "m")
    assert_refused(dev, True, "is mounted", "unmount it first")


def test_refuses_partition_table_without_partitions(attach: Attach) -> None:
    dev = attach(mbr=True)
    assert_refused(dev, True, "dos partition table", "wipefs -a")


def test_refuses_disk_with_partitions(attach: Attach) -> None:
    dev = attach(mbr=True, partscan=True)
    part = add_partitions(dev)
    assert_refused(dev, True, "whole disk with partitions", part)


def test_refuses_disk_whose_partition_is_mounted(scratch: Path, attach: Attach) -> None:
    dev = attach(32 * MiB, mbr=True, partscan=True)
    part = add_partitions(dev)
    mkfs_ext4(part, FSBENCH_LABEL)
    mount(part, scratch / "p")
    assert_refused(dev, True, "mounted", part, str(scratch / "p"))


def test_refuses_foreign_ext4(attach: Attach) -> None:
    dev = attach()
    mkfs_ext4(dev, "home")
    assert_refused(dev, True, "signature (ext4", "'home'", "wipefs -a")


def test_refuses_unlabelled_ext4(attach: Attach) -> None:
    dev = attach()
    run("mkfs.ext4", "-q", "-F", dev)
    assert_refused(dev, True, "signature (ext4")


def test_refuses_swap_signature(attach: Attach) -> None:
    dev = attach()
    run("mkswap", "-L", FSBENCH_LABEL, dev)  # even labelled: swap is not a filesystem
    assert_refused(dev, True, "signature (swap")


def test_refuses_device_held_exclusively(attach: Attach) -> None:
    dev = attach()
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)  # as mkfs, dm or md would hold it
    try:
        assert_refused(dev, True, "EBUSY")
    finally:
        os.close(fd)


def test_refuses_root_device() -> None:
    """The disk under / (found, never assumed: elsewhere the disk this machine boots from
    may be a blank scratch disk) is refused before anything opens it for writing."""
    disk = root_disk()
    if disk is None:
        pytest.skip("/ is not on a block device here (overlay, tmpfs, network)")
    # The root filesystem is live (and may not even be readable here): no checksum,
    # but the refusal must come from the probe, before any open for writing.
    with pytest.raises(UnsafeDeviceError) as info:
        BlockDevice(disk, destroy_data=True).open()
    msg = str(info.value)
    assert "root filesystem" in msg and disk in msg and "\n" not in msg


# -- BlockDevice accepted ----------------------------------------------------------


def test_accepts_blank_loop(attach: Attach) -> None:
    dev = attach(16 * MiB)
    target = BlockDevice(dev, destroy_data=True)
    with target:
        assert target.device == dev
        assert target.size_bytes == 16 * MiB
        d = target.describe()
        assert d["kind"] == "device" and d["path"] == dev and d["size_bytes"] == 16 * MiB
        assert d["diskstats_name"] == Path(dev).name == target.diskstats_name
        assert isinstance(d["rotational"], bool) or d["rotational"] is None
        assert "model" in d
        assert target.reset() == "ok"
        assert target.describe()["discard"] == "ok"
    assert devinfo.loop_backing_file(Path(dev).name) is not None  # not ours to detach


def test_a_real_discard_error_fails_instead_of_unsupported(scratch: Path, attach: Attach) -> None:
    """EBUSY (something mounted the device after the checks) is an error of the trial,
    not a property of the device to record as 'unsupported'."""
    dev = attach(64 * MiB)
    with BlockDevice(dev, destroy_data=True) as target:
        mkfs_ext4(dev, FSBENCH_LABEL)
        mount(dev, scratch / "mnt")
        with pytest.raises(TrialFailed, match=f"blkdiscard {dev} failed: .*busy") as info:
            target.reset()
        assert "\n" not in info.value.message
        devinfo.unmount(str(scratch / "mnt"))
        assert target.reset() == "ok"


def test_each_trial_records_its_discard(scratch: Path) -> None:
    """The discard of every trial is in that trial's provenance (the target is described
    before the first one, so its description alone said 'not tried')."""
    plan = Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="raw")],
        workload=[WorkloadSpec(name="alloc", params={"method": "fallocate", "size": "8M"})],
        scale=Scale.TINY,
    )
    ext4, _raw = planning.expand(plan)
    with LoopImage(scratch, 128 * MiB) as target:
        runner = Runner(target, mount_root(scratch), Scale.TINY, cache_root(scratch))
        (record,) = runner.run_cell(1, 1, ext4)
        assert record.status == "ok", record.message
        assert record.provenance["discard"] == "ok"
    ram = scratch / "ram"
    ram.mkdir()
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", str(ram)], check=False).returncode:
        pytest.skip("cannot mount ramfs")
    with LoopImage(ram, 128 * MiB) as target:
        runner = Runner(target, mount_root(scratch), Scale.TINY, cache_root(scratch))
        (record,) = runner.run_cell(1, 1, ext4)
        assert record.status == "ok", record.message
        assert record.provenance["discard"].startswith("unsupported: ")


def test_accepts_fsbench_labelled_ext4(scratch: Path, attach: Attach) -> None:
    dev = attach()
    mkfs_ext4(dev, FSBENCH_LABEL)
    with BlockDevice(dev, destroy_data=True) as target:
        assert target.device == dev
        target.reset()
    assert devinfo.mounts_under(scratch) == []


def test_accepts_symlink_to_blank_loop(scratch: Path, attach: Attach) -> None:
    dev = attach()
    link = scratch / "link"
    link.symlink_to(dev)
    with BlockDevice(str(link), destroy_data=True) as target:
        assert target.device == dev


# -- stale resources ---------------------------------------------------------------


def test_release_stale_after_owner_dies(scratch: Path) -> None:
    child = subprocess.Popen(["sleep", "30"])
    mine = LoopImage(scratch, 16 * MiB)  # owned by this (live) process
    theirs = LoopImage(scratch, 32 * MiB, owner_pid=child.pid)
    try:
        theirs.open()
        mine.open()
        assert theirs.image is not None and mine.image is not None
        their_dev, their_image = theirs.device, theirs.image
        mkfs_ext4(their_dev, FSBENCH_LABEL)
        their_mnt = theirs.mount_dir()
        mount(their_dev, their_mnt)
        their_extra = theirs.mount_dir("extra")
        their_extra.mkdir()
        my_mnt = mine.mount_dir()
        my_mnt.mkdir()
        leftover = scratch / f"fsbench-{child.pid}-3.img"
        leftover.write_bytes(b"x")
        untouchable = [
            scratch / "notes.txt",
            scratch / "fsbench-abc.img",
            scratch / f"fsbench-{child.pid}.img.bak",
            scratch / f"xmnt-{child.pid}",
        ]
        for path in untouchable:
            path.write_text("keep")

        assert stale.find_stale(scratch) == []  # the owner is alive: nothing is stale
        assert stale.release_stale(scratch) == []

        child.kill()
        child.wait()
        found = stale.find_stale(scratch)
        kinds = sorted((r.kind, r.path.name) for r in found)
        assert kinds == [
            ("image", leftover.name),
            ("loop", their_image.name),
            ("mountdir", their_mnt.name),
            ("mountdir", their_extra.name),
        ]
        assert all(r.pid == child.pid for r in found)

        lines = stale.release_stale(scratch)
        text = "\n".join(lines)
        assert f"unmounted {their_mnt}" in text
        assert f"detached {their_dev}" in text
        assert f"deleted {their_image}" in text
        assert not any(line.startswith("could not") for line in lines), text

        assert attached_loops(their_image) == []
        assert str(their_image) not in run("losetup", "-a")
        mountinfo = Path("/proc/self/mountinfo").read_text()
        assert str(their_mnt) not in mountinfo
        assert not their_image.exists() and not leftover.exists()
        assert not their_mnt.exists() and not their_extra.exists()
        # The live owner's resources and everything off-pattern are untouched.
        assert attached_loops(mine.image) == [mine.device]
        assert mine.image.exists() and my_mnt.is_dir()
        for path in untouchable:
            assert path.read_text() == "keep"
        assert stale.release_stale(scratch) == []
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait()
        theirs.close()
        mine.close()
    assert loops_backed_under(scratch) == []


def test_zombie_owner_counts_as_dead() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert stale.pid_alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while stale.pid_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not stale.pid_alive(child.pid)  # a zombie until reaped below
    finally:
        child.kill()
        child.wait()
    assert not stale.pid_alive(child.pid)


def test_loop_image_open_failing_halfway_leaves_nothing(scratch: Path) -> None:
    """A read-only workdir: the image cannot be made; open() fails cleanly and close()
    still works."""
    ro = scratch / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=4m", "tmpfs", str(ro)]).returncode:
        pytest.skip("cannot mount tmpfs")
    target = LoopImage(ro, 1 * MiB)
    with pytest.raises(FsbenchError) as info:
        target.open()
    assert "cannot create image" in str(info.value) and "\n" not in str(info.value)
    target.close()
    target.close()
    assert loops_backed_under(scratch) == []


def _privately_mounted(pid: int, mnt: Path) -> bool:
    """`mnt` is mounted in pid's own mount namespace, and no mount event of ours reaches
    it there (no `shared:` peer group in /proc/PID/mountinfo)."""
    if os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
        return False
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split(" - ")[0].split()
        if fields[4] == str(mnt):
            return not any(f.startswith("shared:") for f in fields[6:])
    return False


@pytest.mark.alone  # its namespace copies every mount: see tests/conftest.py
def test_a_discard_refused_as_busy_names_what_holds_the_device(scratch: Path) -> None:
    """A filesystem of the run's device unmounted here but still mounted in another
    process's mount namespace (an `unshare --mount` made while it was mounted) keeps the
    device busy: the reset fails naming that mount and the process; must not fire: once
    that process ends, the reset discards."""
    with LoopImage(scratch, 64 * MiB) as target:
        mnt = scratch / "mnt"
        mnt.mkdir()
        mkfs_ext4(target.device, "busy")
        mount(target.device, mnt)
        holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sleep", "120"]
        )
        try:
            # unshare makes the namespace, then makes its mounts private: until then an
            # umount here would propagate into it too, and leave the device free.
            deadline = time.monotonic() + 10
            while not _privately_mounted(holder.pid, mnt):
                assert time.monotonic() < deadline, "unshare never made its namespace private"
                time.sleep(0.05)
            assert devinfo.unmount(str(mnt)) is None
            with pytest.raises(TrialFailed) as busy:
                target.reset()
            assert f"mounted at {mnt} in the mount namespace of pid {holder.pid}" in str(
                busy.value
            ), busy.value
        finally:
            holder.kill()
            holder.wait()
        assert target.reset() == "ok"
    assert loops_backed_under(scratch) == []
