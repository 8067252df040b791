"""The faults of an unattended night, each injected for real at a random moment of a real
run, again and again (issue 52):

- `pg-restart`: the run's PostgreSQL server (its own, tests/pgcluster.py) stopped and
  started again 1 to 20 s later;
- `store-full`: its SQLite store on an 8 MiB loop-mounted ext4, filled;
- `engine-kill`: the engine's process SIGKILLed in a trial (the OOM killer);
- `guest-freeze`: the QEMU of a VM run's guest SIGSTOPped in a counted trial (a hung
  guest), the run's trial limit short (--trial-timeout 30);
- `sigterm`, `sighup`: fsbench itself told to stop.

    .venv/bin/python bench/fault_campaign.py [--attempts 20] [--seed 1] [--faults F,...]
        [--save]

Each fault is injected into `--attempts` runs: a run that ended before its fault came is
counted as missed, and another is tried. Each fault's runs go one after the other, the
faults side by side (a thread each: a count, not a timing; the guest's take minutes each,
its trial limit and the host's margin). After each fault the run is finished as an
operator would (the server started again, space freed, `fsbench resume RUN` when it ended
interrupted). Prints per fault: attempts, runs finished without help, runs resumable
(interrupted, then finished by a resume), missed (the run ended before its fault came, or
its signal came while the command printed the finished run's table: finished, the run
untouched), trials lost (a
planned slot missing or stored twice: must be 0), leaks (a mount, loop device, QEMU
process or guest directory left: must be 0). `--save` writes
bench/results/fault_campaign.json. Needs root (and /dev/kvm or patience for the guest)."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import results_file  # noqa: E402

from fsbench.store.results import Store  # noqa: E402
from tests.helpers import TEST_DATA_HOME, default_interrupts, fsbench, ours  # noqa: E402
from tests.pgcluster import Cluster, cluster  # noqa: E402

ALLOC = [
    *["--fs", "ext4,xfs", "--workload", "alloc", "--set", "method=fallocate,write-4k"],
    *["--set", "size=16M", "--reps", "3", "--scale", "tiny", "--image-size", "1G"],
]
ENGINE = [
    *["--fs", "ext4", "--workload", "varmail", "--set", "duration=2", "--reps", "3"],
    *["--scale", "tiny", "--image-size", "1G"],
]
GUEST = [
    *["--target", "vm", "--fs", "ext4,xfs", "--workload", "alloc", "--set", "method=write-4k"],
    *["--set", "size=8M", "--reps", "1", "--scale", "tiny", "--image-size", "1G"],
    *["--guest-ram", "1024", "--guest-cpus", "1", "--trial-timeout", "30"],
]
ARGS = {"engine-kill": ENGINE, "guest-freeze": GUEST}  # the others: ALLOC
FAULTS = ("pg-restart", "store-full", "engine-kill", "guest-freeze", "sigterm", "sighup")


@dataclass
class Tally:
    attempts: int = 0
    finished: int = 0  # without help
    resumable: int = 0  # ended interrupted, finished by `fsbench resume`
    before_start: int = 0  # the fault came before the run was stored: run again, finished
    missed: int = 0  # the run ended before its fault came (counted in finished)
    unfinished: int = 0  # neither: a defect
    trials_lost: int = 0
    leaks: int = 0


@dataclass
class Attempt:
    """One run: where it works, its store, its arguments."""

    workdir: Path
    db: str
    args: list[str]


def _start(attempt: Attempt) -> subprocess.Popen[bytes]:
    argv = ["run", *attempt.args, "--workdir", str(attempt.workdir / "work"), "--db", attempt.db]
    with open(attempt.workdir / "run.err", "wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "fsbench.cli", *argv, "--no-report"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "XDG_DATA_HOME": str(TEST_DATA_HOME)},
            # SIGHUP as a session hands it down (the campaign may run under nohup, and
            # fsbench leaves an ignored signal ignored): the fault must reach the run.
            preexec_fn=default_interrupts,
        )


def _children(parent: int, name: bytes) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            argv0 = (stat.parent / "cmdline").read_bytes().split(b"\0")[0]
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and argv0.endswith(name):
            found.append(int(stat.parent.name))
    return found


def _settle(attempt: Attempt, proc: subprocess.Popen[bytes], tally: Tally) -> None:
    """The run after its fault: finished, or resumed until it is; its trials checked."""
    rc = proc.wait(timeout=900)
    if rc in (0, 4):
        tally.finished += 1
    elif rc < 0 and _finished(attempt.db):
        # Its signal came after the run had ended (while the command printed its table,
        # the handlers given back): the run is whole, the fault missed it.
        tally.finished += 1
        tally.missed += 1
    elif not _stored(attempt.db):
        work = ["--workdir", str(attempt.workdir / "work"), "--db", attempt.db]
        res = fsbench("run", *attempt.args, *work, timeout=900)
        tally.before_start += res.returncode in (0, 4)
        tally.unfinished += res.returncode not in (0, 4)
    else:
        res = fsbench("resume", "--db", attempt.db, timeout=900)
        if res.returncode in (0, 4):
            tally.resumable += 1
        else:
            tally.unfinished += 1
            said = (attempt.workdir / "run.err").read_text(errors="replace")
            print(f"unfinished (exit {rc}): {said[-500:]}\nresume: {res.stderr}", file=sys.stderr)
    store = Store(attempt.db)
    try:
        for run in store.list_runs():
            trials = store.get_trials(run.id)
            slots = [(t.seq, t.step) for t in trials]
            planned = {t.seq for t in trials if t.seq < len(run.schedule)}
            tally.trials_lost += len(slots) - len(set(slots))  # stored twice
            tally.trials_lost += len(run.schedule) - len(planned)  # never stored
    finally:
        store.close()
    work = attempt.workdir / "work"
    loops, mounts = ours(work)  # the run's (the store's disk is ours)
    tally.leaks += len(loops) + len(mounts) + len(_qemus(work)) + len(list(work.glob("vm-*")))


def _qemus(under: Path) -> list[int]:
    """QEMU processes whose command line names a path under `under`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"qemu-system" in argv[0] and any(str(under).encode() in a for a in argv):
            found.append(int(cmdline.parent.name))
    return found


def _counted_trial_started(work: Path) -> bool:
    """A guest's console under `work` says a trial past the warm-up round started."""
    for console in work.glob("vm-*/console.log"):
        text = console.read_text(errors="replace")
        if " rep 1: " in text:
            return True
    return False


def _newest_status(db: str) -> str | None:
    """The status of the store's newest run (None: the run never got as far as the
    store)."""
    if not db.startswith("postgresql") and not Path(db).exists():
        return None
    store = Store(db)
    try:
        run_id = store.latest_run_id()
        return None if run_id is None else store.get_run(run_id).status
    finally:
        store.close()


def _stored(db: str) -> bool:
    """Whether the run got as far as the store."""
    return _newest_status(db) is not None


def _finished(db: str) -> bool:
    """Whether the store's newest run ended finished."""
    return _newest_status(db) == "finished"


@contextmanager
def _store_disk(workdir: Path) -> Iterator[Path]:
    """An 8 MiB ext4 mounted under `workdir`, released on every path."""
    disk, mnt = workdir / "store.img", workdir / "store"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "8M", str(disk)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(disk)], check=True)
    subprocess.run(["mount", "-o", "loop", str(disk), str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def _one(fault: str, workdir: Path, rng: random.Random, pg: Cluster | None, n: int) -> Tally:
    tally = Tally(attempts=1)
    # Into the run (about 20 s): set-up, a trial, a store write; the guest's is chosen
    # in a counted trial (_inject).
    moment = 0.0 if fault == "guest-freeze" else rng.uniform(0.0, 12.0)
    with ExitStack() as stack:
        if fault == "pg-restart":
            assert pg is not None
            attempt = Attempt(workdir, pg.createdb(f"night{n}"), ALLOC)
        elif fault == "store-full":
            mnt = stack.enter_context(_store_disk(workdir))
            attempt = Attempt(workdir, str(mnt / "results.db"), ALLOC)
        else:
            attempt = Attempt(workdir, str(workdir / "results.db"), ARGS.get(fault, ALLOC))
        proc = _start(attempt)
        try:
            deadline = time.monotonic() + 120  # fsbench started (its imports take a while)
            while proc.poll() is None and time.monotonic() < deadline:
                if _stored(attempt.db):
                    break
                time.sleep(0.2)
            time.sleep(moment)
            tally.missed += not _inject(fault, proc, attempt, rng, pg)
            _settle(attempt, proc, tally)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return tally


def _inject(
    fault: str,
    proc: subprocess.Popen[bytes],
    attempt: Attempt,
    rng: random.Random,
    pg: Cluster | None,
) -> bool:
    """Inject `fault` into the run; False when the run ended before it could be."""
    if proc.poll() is not None:
        return False  # the run ended before its fault: it counts as finished
    if fault == "pg-restart" and pg is not None:
        pg.stop(rng.choice(["fast", "immediate"]))
        time.sleep(rng.uniform(1.0, 20.0))
        pg.start()
    elif fault == "store-full":
        filler = Path(attempt.db).parent / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        try:
            proc.wait(timeout=900)
        finally:
            filler.unlink()  # the operator frees space
    elif fault == "engine-kill":
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            pids = _children(proc.pid, b"fsbench-engine")
            if pids and _signal(pids[0], signal.SIGKILL):
                return True
            time.sleep(0.05)
        return False
    elif fault == "guest-freeze":
        work = attempt.workdir / "work"
        deadline = time.monotonic() + 600  # the guest booted, its warm-up round done
        while proc.poll() is None and time.monotonic() < deadline:
            pids = _qemus(work)
            if pids and _counted_trial_started(work):
                time.sleep(rng.uniform(0.0, 5.0))  # a moment of the trial (seconds under TCG)
                if _signal(pids[0], signal.SIGSTOP):
                    return True
            time.sleep(0.05)
        return False
    else:
        proc.send_signal(signal.SIGTERM if fault == "sigterm" else signal.SIGHUP)
    return True


def _signal(pid: int, sig: signal.Signals) -> bool:
    """Send `sig` to `pid`; False when it has just exited (an engine between trials, a
    guest powering off): the caller looks for the next one."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def campaign(faults: list[str], attempts: int, seed: int) -> dict[str, Tally]:
    tallies = {fault: Tally() for fault in faults}
    with ExitStack() as stack:
        pg = stack.enter_context(cluster()) if "pg-restart" in faults else None
        threads = [
            threading.Thread(target=_series, args=(fault, attempts, seed, pg, tallies[fault]))
            for fault in faults
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return tallies


def _series(fault: str, attempts: int, seed: int, pg: Cluster | None, tally: Tally) -> None:
    """`fault`'s attempts, one after the other, its moments drawn from its own seed."""
    rng = random.Random(f"{seed}-{fault}")
    n = 0
    # `attempts` faults that reached a run: a run that ended before its fault came is
    # tried again (at most 3x over, so a fault that never lands cannot loop forever).
    while tally.attempts - tally.missed < attempts and n < 3 * attempts:
        workdir = Path(tempfile.mkdtemp(prefix="fsbench-faults-", dir="/var/tmp"))
        try:
            one = _one(fault, workdir, rng, pg, n)
        except Exception as exc:  # a defect of the campaign's own: counted, the rest go on
            print(f"{fault} {n + 1}: {type(exc).__name__}: {exc}", file=sys.stderr)
            one = Tally(attempts=1, unfinished=1)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        _add(tally, one)
        n += 1
        print(f"{fault} {n}: {asdict(tally)}", file=sys.stderr, flush=True)


def _add(into: Tally, one: Tally) -> None:
    for key, value in asdict(one).items():
        setattr(into, key, getattr(into, key) + value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))} (known: {', '.join(FAULTS)})")
    started = datetime.now(UTC)
    tallies = campaign(faults, args.attempts, args.seed)
    for fault, tally in tallies.items():
        print(
            f"{fault}: attempts {tally.attempts}, finished {tally.finished}, resumable "
            f"{tally.resumable}, stopped before it started {tally.before_start}, missed "
            f"{tally.missed}, unfinished {tally.unfinished}, trials lost {tally.trials_lost}, "
            f"leaks {tally.leaks}"
        )
    if args.save:
        results = {
            "seed": args.seed,
            "injected_per_fault": args.attempts,
            "runs": {f: ["fsbench", "run", *ARGS.get(f, ALLOC)] for f in faults},
            "faults": {f: asdict(t) for f, t in tallies.items()},
        }
        engine = REPO / "engine" / "target" / "release" / "fsbench-engine"
        results_file.save("fault_campaign", results, started, engine=engine)
    bad = any(t.trials_lost or t.leaks or t.unfinished for t in tallies.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
