"""Runs every probe on every filesystem and assembles the table.

Work is split into tasks of (filesystem, setup group): each task makes its own sparse loop
image, formats it once (or lets a managed probe format it), runs the group's probes in
order, and releases mounts, loop device and image on every path. Tasks run on a few worker
threads at once: probes state facts, not timings, and the slow inode fill of one filesystem
then overlaps with the quick probes of the others. On Ctrl-C (or SIGTERM turned into
KeyboardInterrupt by the CLI) the workers stop at their next check and release what they
hold; the interrupt is raised again once they have.
"""

from __future__ import annotations

import contextlib
import platform
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from fsbench.execute.features import registry
from fsbench.execute.features.base import (
    Cancelled,
    Evidence,
    NotApplicable,
    Probe,
    Scratch,
    Settings,
)
from fsbench.execute.targets.loop import LoopImage
from fsbench.store.features import FeatureRow, FeatureTable, Result
from fsbench.system import filesystems
from fsbench.system.errors import Unsupported
from fsbench.system.filesystems import FsType

Results = dict[str, Result]  # feature name -> result, for one filesystem
Progress = Callable[[int, int, list[str]], None]  # done, total, labels of running tasks


@dataclass(frozen=True)
class Task:
    fs: FsType
    key: str
    probes: tuple[Probe, ...]

    @property
    def label(self) -> str:
        return f"{self.fs.name} {self.key}"


def groups(probes: Sequence[Probe]) -> list[tuple[str, tuple[Probe, ...]]]:
    """Probes grouped by setup key, groups in the order of their first probe."""
    out: dict[str, list[Probe]] = {}
    for p in probes:
        out.setdefault(p.setup.key, []).append(p)
    return [(k, tuple(v)) for k, v in out.items()]


def _all(probes: Sequence[Probe], make: Callable[[], Result]) -> Results:
    return {f.name: make() for p in probes for f in p.features}


def _run_probe(probe: Probe, scratch: Scratch) -> Results:
    names = [f.name for f in probe.features]
    try:
        got = probe.run(scratch)
    except (Cancelled, KeyboardInterrupt):
        raise
    except Unsupported as exc:
        return {
            n: Result(supported="no", evidence=[exc.detail] if exc.detail else [], note=exc.message)
            for n in names
        }
    except NotApplicable as exc:
        return {n: Result(supported="n/a", note=str(exc)) for n in names}
    except Exception as exc:  # a probe's bug must not cost the rest of the table
        note = f"probe failed: {type(exc).__name__}: {exc}"
        return {n: Result(supported="error", note=note) for n in names}
    missing = Result(supported="error", note=f"probe {probe.name} gave no result")
    return {n: got.get(n, missing) for n in names}


MNT = "MNT"  # the mount point, in evidence and notes: the path is long and means nothing


def _short_paths(r: Result, mnt: str) -> Result:
    return r.model_copy(
        update={
            "evidence": [e.replace(mnt, MNT) for e in r.evidence],
            "note": r.note.replace(mnt, MNT),
            "value": r.value.replace(mnt, MNT) if isinstance(r.value, str) else r.value,
        }
    )


def run_task(task: Task, workdir: Path, settings: Settings, cancel: threading.Event) -> Results:
    """One filesystem, one setup group: fresh image, fresh filesystem, the group's probes."""
    if cancel.is_set():
        raise Cancelled()
    setup = task.probes[0].setup
    out: Results = {}
    target = LoopImage(workdir, setup.size(settings))
    with target:
        mnt = target.mount_dir(f"feat-{task.fs.name}-{task.key}")
        scratch = Scratch(task.fs, target, mnt, settings, cancel)
        try:
            if not setup.managed:
                ev = Evidence()
                try:
                    scratch.mkfs(setup.mkfs.get(scratch.family, ()), ev)
                    scratch.mount(setup.mount.get(scratch.family, ""), ev)
                except Unsupported as exc:
                    why = exc.message
                    return _all(task.probes, lambda: ev.result(setup.refused, note=why))
            for probe in task.probes:
                scratch.check()
                out.update(_run_probe(probe, scratch))
            out = {k: _short_paths(r, str(mnt)) for k, r in out.items()}
        finally:
            with contextlib.suppress(Exception):
                scratch.umount()
            # LoopImage.close() unmounts whatever is left on its device, then detaches it
            # and deletes the image; the empty mount point is ours to remove.
            target.close()
            with contextlib.suppress(OSError):
                mnt.rmdir()
    return out


def run_features(
    fs_names: Sequence[str],
    workdir: Path,
    settings: Settings | None = None,
    probes: Sequence[Probe] | None = None,
    progress: Progress | None = None,
) -> FeatureTable:
    """Probe every filesystem in `fs_names`; unavailable ones get a column saying why."""
    settings = settings or Settings()
    probes = list(registry.probes() if probes is None else probes)
    t0 = time.monotonic()
    kernel_fs = filesystems.kernel_filesystems()
    columns: dict[str, Results] = {}
    tasks: list[Task] = []
    grouped = groups(probes)
    available: list[FsType] = []
    for name in fs_names:
        fs = filesystems.get(name)
        avail = filesystems.availability(fs, kernel_fs)
        if fs.pseudo:
            bare = Result(supported="n/a", note="not a filesystem (the bare device)")
            columns[name] = _all(probes, bare.model_copy)
        elif not avail.available:
            lacking = Result(supported="unsupported", note=f"unavailable: {avail.reason}")
            columns[name] = _all(probes, lacking.model_copy)
        else:
            columns[name] = {}
            available.append(fs)
    # Group-major order: the slow groups come first in the registry, so every filesystem's
    # inode fill starts early and the quick groups fill the gaps.
    tasks = [Task(fs, key, members) for key, members in grouped for fs in available]
    _execute(tasks, workdir, settings, columns, progress)
    rows = [
        FeatureRow(
            name=f.name,
            question=f.question,
            quantity=f.quantity,
            results={fs: columns[fs][f.name] for fs in fs_names},
        )
        for p in probes
        for f in p.features
    ]
    return FeatureTable(
        filesystems=list(fs_names),
        features=rows,
        kernel=platform.release(),
        seconds=round(time.monotonic() - t0, 1),
    )


def _execute(
    tasks: list[Task],
    workdir: Path,
    settings: Settings,
    columns: dict[str, Results],
    progress: Progress | None,
) -> None:
    if not tasks:
        return
    cancel = threading.Event()
    done = 0
    pool = ThreadPoolExecutor(max_workers=max(1, settings.workers), thread_name_prefix="features")
    pending: dict[Future[Results], Task] = {}
    try:
        for task in tasks:
            pending[pool.submit(run_task, task, workdir, settings, cancel)] = task
        running: dict[Future[Results], Task] = dict(pending)
        if progress:
            progress(0, len(tasks), [])
        while running:
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                task = running.pop(fut)
                columns[task.fs.name].update(fut.result())
                done += 1
            if progress:
                labels = [t.label for f, t in running.items() if f.running()]
                progress(done, len(tasks), labels)
    except BaseException:
        cancel.set()
        for fut in pending:
            fut.cancel()
        _wait_for_release(pending)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _wait_for_release(futures: dict[Future[Results], Task]) -> None:
    """After an interrupt: the workers unmount and detach on their own way out; a second
    Ctrl-C must not leave the process before they have."""
    while True:
        try:
            wait(futures)
            return
        except KeyboardInterrupt:
            continue
