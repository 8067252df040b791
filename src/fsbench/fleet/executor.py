"""The fleet executor: the whole plan on every host of an Ansible inventory.

Each host runs the same plan (same seed, so the same order) with its own fsbench on its
own target, as an async Ansible task that survives SSH drops, into one shared store: a
PostgreSQL every host writes straight into, or, for hosts that cannot reach it
(`fsbench_store=fetch`, or a SQLite `--db`), a store of its own that is fetched and merged
at the end. Each host's trials form a member run of the fleet run (its inventory name,
groups and hostname with it); reports of the fleet run read them all, the host as a
dimension.

The controller polls: status.yml every `poll` seconds reads each host's async job and the
progress file its fsbench writes. A host whose run fails, or that cannot be reached for
longer than `unreachable_timeout` since it last answered, fails alone: the others go on,
and what it finished is kept. Ctrl-C on the controller ends each host's run like Ctrl-C
(stop.yml), collects what they stored, and `fsbench resume RUN` finishes what
is missing, on the hosts that miss it (a host whose earlier fsbench still runs there is
refused by start.yml rather than given a second one).
"""

from __future__ import annotations

import base64
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from fsbench import workloads
from fsbench.execute.executors import base as checks
from fsbench.execute.executors.base import Binding, Executor, OnRecords, OnStart
from fsbench.execute.schedule import Slot
from fsbench.fleet import inventory as inv
from fsbench.fleet.ansible import Ansible, Event, binary
from fsbench.fleet.inventory import FleetHost
from fsbench.fleet.member import MemberProgress
from fsbench.fleet.target import FleetTargetSpec
from fsbench.plan.model import Cell, Plan
from fsbench.plan.targets import LoopTargetSpec
from fsbench.store.dburl import pgpass_line, strip_password
from fsbench.store.results import Store
from fsbench.system.errors import FsbenchError

# fsbench's exit codes on a host that ran its plan (run.py): measured, some unsupported,
# some trials failed. Anything else is the host failing.
RAN = {0: "ok", 3: "ok (some cells unsupported)", 4: "some trials failed"}
# Where a host keeps the input files copied to it (the replay's traces), under fsbench_dir.
INPUTS = "inputs"
# An async job Ansible lets run at most this long (the plan's own limits end it sooner).
ASYNC_LIMIT = 7 * 24 * 3600


@dataclass
class HostRun:
    """What the controller knows of one host's part."""

    host: FleetHost
    state: str = "waiting"  # waiting | running | done | failed
    jid: str = ""
    rc: int | None = None
    error: str = ""
    progress: MemberProgress = field(default_factory=MemberProgress)
    started: float = 0.0
    finished: float = 0.0
    seen: float = 0.0  # when the host last answered (its start, a poll)
    launched: bool = False  # started (or tried) by this controller invocation

    @property
    def done(self) -> int:
        return self.progress.done

    @property
    def total(self) -> int:
        return self.progress.total

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": list(self.host.groups),
            "state": self.state,
            "rc": self.rc,
            "error": self.error,
            "done": self.done,
            "total": self.total,
            "hostname": self.progress.hostname,
            "member_run": self.progress.run_id,
            "launched": self.launched,
        }


OnProgress = Callable[[list[HostRun]], None]


def _quiet(hosts: list[HostRun]) -> None:
    pass


class FleetExecutor(Executor):
    """Every host of the inventory runs the whole plan; see the module docstring."""

    kind: ClassVar[str] = "fleet"
    whole_plan: ClassVar[bool] = True

    def __init__(
        self,
        plan: Plan,
        cells: Sequence[Cell],
        *,
        hosts: Sequence[FleetHost] | None = None,
        inventory: Path | None = None,
        store: Store | None = None,
        uid: str | None = None,
        workdir: Path | None = None,
        poll: float | None = None,
        unreachable_timeout: float | None = None,
        forks: int | None = None,
        on_progress: OnProgress = _quiet,
        ansible: Ansible | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Made from the plan's fleet target by the executor registry (then bound to its
        run); the keywords stand in for it and for the run where a test drives the
        controller's logic (a scripted Ansible, a simulated clock)."""
        super().__init__(plan, cells)
        spec = plan.target if isinstance(plan.target, FleetTargetSpec) else FleetTargetSpec()
        self.spec = spec
        self.inventory = (inventory or spec.inventory).resolve()
        if hosts is None:
            hosts = inv.load(self.inventory, spec.limit)
        if not hosts:
            matching = f" matching --limit {spec.limit!r}" if spec.limit else ""
            raise FsbenchError(f"inventory {self.inventory} has no hosts{matching}")
        self.hosts = [HostRun(h) for h in hosts]
        self.workdir = workdir or spec.controller_dir
        self.poll = spec.poll if poll is None else poll
        self.unreachable_timeout = (
            spec.unreachable_timeout if unreachable_timeout is None else unreachable_timeout
        )
        self.forks = forks or spec.forks
        self.on_progress = on_progress
        self.clock = clock
        self._ansible = ansible
        self._opened = False
        self.inputs: list[dict[str, str]] = []  # files copied to each host: src, dest
        if store is not None and uid is not None:
            self._bind(store, uid)

    def bind(self, run: Binding) -> None:
        view = getattr(run.view, "hosts", None)
        if callable(view):  # a display of every host's progress (fsbench fleet run)
            self.on_progress = view
        self._bind(run.store, run.uid)

    def _bind(self, store: Store, uid: str) -> None:
        self.store = store
        self.uid = uid
        self.dir = self.workdir / f"fleet-{uid}"
        for h in self.hosts:
            # A resumed fleet: a host whose part is finished in the store has nothing left.
            member = store.part(uid, h.host.name)
            if member is not None and member.status == "finished":
                stored = len({t.seq for t in store.get_trials(member.id)})
                h.state = "done"
                h.progress = MemberProgress(run_id=member.id, done=stored, total=stored)
        self.ansible = (
            self._ansible
            if self._ansible is not None
            else Ansible(self.inventory, self.dir, forks=max(1, min(self.forks, len(self.hosts))))
        )

    # -- the contract -----------------------------------------------------------------

    def preflight(self) -> list[str]:
        if binary("ansible-playbook") is None:
            raise FsbenchError("fleet runs need Ansible: make install (ansible-core from PyPI)")
        target = self.plan.target
        if isinstance(target, LoopTargetSpec) and target.device is not None:
            raise FsbenchError(
                "a fleet's real disks are per host: fsbench_device and fsbench_destroy_data "
                "in the inventory, not --device"
            )
        if not isinstance(target, LoopTargetSpec | FleetTargetSpec):
            raise FsbenchError("a fleet runs each host's own loop image or disk: no --target vm")
        for h in self.hosts:
            store = h.host.vars.get("fsbench_store")
            if store is not None and store not in ("direct", "fetch"):
                raise FsbenchError(
                    f"host {h.host.name}: fsbench_store is direct or fetch, not {store!r}"
                )
            if store == "direct" and not self.store.postgresql:
                raise FsbenchError(
                    f"host {h.host.name}: fsbench_store=direct writes into a PostgreSQL --db, "
                    f"not {self.store}"
                )
        checks.check_workloads(self.plan, vm=False)
        # Each host judges its own tools; the files copied to it are checked here.
        checks.check_params(self.cells, inputs_only=True)
        checks.check_fits(self.cells, self.plan.target.image_size, None)
        return []

    def open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        # Each host gets the plan with its own loop image as its target.
        hosts_plan = self.plan.model_copy(update={"target": self.spec.for_hosts()})
        if isinstance(self.plan.target, LoopTargetSpec):  # a plan stored before fleet targets
            hosts_plan = self.plan
        hosts_plan, self.inputs = carried(hosts_plan, self.cells)
        (self.dir / "plan.json").write_text(hosts_plan.model_dump_json(by_alias=True))
        self._opened = True

    def close(self) -> None:
        try:
            if self._opened and any(h.state == "running" for h in self.hosts):
                # Interrupted: each host's run ends like Ctrl-C and keeps what it finished.
                running = [h.host.name for h in self.hosts if h.state == "running"]
                self.ansible.run("stop", self._vars(), running)
                self._wait(grace=120.0)
                self._collect()
        finally:
            if hasattr(self, "ansible"):  # bound to a run
                self.ansible.close()

    def describe(self) -> dict[str, Any]:
        states = [h.state for h in self.hosts]
        shown = ", ".join(f"{s} {states.count(s)}" for s in dict.fromkeys(states))
        return {
            "kind": "fleet",
            "summary": f"fleet of {len(self.hosts)} hosts from {self.inventory.name}, each its "
            f"own loop image or disk ({shown})",
            "inventory": str(self.inventory),
            "hosts": {h.host.name: h.as_dict() for h in self.hosts},
        }

    def unfinished(self) -> list[str]:
        # One line each, however long: scripts and people grep for "host NAME failed".
        return [f"host {h.host.name} failed: {h.error}" for h in self.hosts if h.state != "done"]

    def banner(self) -> str:
        return f"on {len(self.hosts)} hosts through Ansible, polled every {self.poll:g} s"

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        """Start every host, poll until none runs, collect. Hosts store their own trials
        (whole_plan): `on_records` is not called."""
        self._start([h for h in self.hosts if h.state in ("waiting", "failed")])
        self._wait()
        self._collect()

    # -- the phases -------------------------------------------------------------------

    def _vars(self) -> dict[str, Any]:
        url = self.store.secret_url
        direct = self.store.postgresql
        return {
            "fsbench_fleet_uid": self.uid,
            "fsbench_plan_src": str(self.dir / "plan.json"),
            "fsbench_source_tar": str(self._source_tar()) if self._needs_install() else "",
            "fsbench_default_store": "direct" if direct else "fetch",
            "fsbench_db_direct": strip_password(url) if direct else "",
            "fsbench_async_limit": ASYNC_LIMIT,
            "fsbench_jobs": {h.host.name: h.jid for h in self.hosts if h.jid},
            "fsbench_collect_dir": str(self.dir / "stores"),
            "fsbench_inputs": self.inputs,
        }

    def _needs_install(self) -> bool:
        return any("fsbench_path" not in h.host.vars for h in self.hosts)

    def _source_tar(self) -> Path:
        """This fsbench's source, for hosts that install it with `make install`."""
        path = self.dir / "fsbench-src.tar.gz"
        if path.exists():
            return path
        root = Path(__file__).resolve().parents[3]
        if not (root / "Makefile").exists():
            raise FsbenchError("this fsbench is not a source checkout: give each host fsbench_path")
        with tarfile.open(path, "w:gz") as tar:
            for name in ("Makefile", "pyproject.toml", "README.md", "src", "engine"):
                tar.add(
                    root / name,
                    arcname=f"src/{name}",
                    filter=_source_only,
                )
        return path

    def _start(self, hosts: list[HostRun]) -> None:
        if not hosts:
            return
        now = self.clock()
        for h in hosts:
            h.state, h.error, h.rc, h.started, h.launched = "running", "", None, now, True
        # The password reaches the hosts in start.yml alone, and never through a file here.
        url = self.store.secret_url
        secret = pgpass_line(url) if self.store.postgresql else ""
        events = self.ansible.run("start", self._vars(), [h.host.name for h in hosts], secret)
        by_host = _by_host(events)
        answered = self.clock()
        for h in hosts:
            mine = by_host.get(h.host.name, [])
            bad = next((e for e in mine if e.status in ("failed", "unreachable")), None)
            job = next((e for e in mine if e.task == "run" and e.status == "ok"), None)
            if bad is not None:
                h.state, h.error = "failed", f"{bad.status} at {bad.task}: {bad.reason}"
            elif job is None or not job.data.get("ansible_job_id"):
                h.state, h.error = "failed", "the run did not start (see ansible.log)"
            else:
                h.jid, h.seen = str(job.data["ansible_job_id"]), answered
        self.on_progress(self.hosts)

    def _wait(self, grace: float | None = None) -> None:
        """Poll until no host runs (or `grace` seconds passed)."""
        t0 = self.clock()
        while any(h.state == "running" for h in self.hosts):
            if grace is not None and self.clock() - t0 > grace:
                break
            time.sleep(self.poll)
            running = [h for h in self.hosts if h.state == "running"]
            events = _by_host(
                self.ansible.run("status", self._vars(), [h.host.name for h in running])
            )
            now = self.clock()
            for h in running:
                self._update(h, events.get(h.host.name, []), now)
            self.on_progress(self.hosts)

    def _update(self, h: HostRun, events: list[Event], now: float) -> None:
        answers = [e for e in events if e.status != "unreachable"]
        if not answers:
            # Not reached (or Ansible said nothing of it): its run may well go on there,
            # so it is polled again, up to the bound.
            away = now - h.seen
            why = events[0].reason if events else "no answer"
            if away > self.unreachable_timeout:
                h.state = "failed"
                h.error = (
                    f"unreachable for {away:.0f} s (--unreachable-timeout "
                    f"{self.unreachable_timeout:g}): {why}"
                )
            else:
                h.error = f"unreachable for {away:.0f} s: {why}"
            return
        h.seen, h.error = now, ""
        for event in answers:
            if event.task == "progress" and event.data.get("content"):
                try:
                    h.progress = MemberProgress.model_validate_json(
                        base64.b64decode(event.data["content"])
                    )
                except ValueError:
                    pass
            if event.task == "job" and event.data.get("finished"):
                h.rc = _rc(event.data.get("rc"))
                h.finished = now
                if h.rc in RAN:
                    h.state, h.error = "done", ""
                else:
                    h.state = "failed"
                    h.error = _last_line(event.data) or f"fsbench exited with {h.rc}"

    def _collect(self) -> None:
        """Fetch the stores of hosts that kept their own, merge them into the shared one;
        on every host this controller started or tried to start (one that failed before
        its job began may hold the password file too), forget the password and the job."""
        from fsbench.store.merge import merge_store

        names = [h.host.name for h in self.hosts if h.launched or h.jid or h.state == "done"]
        if not names:
            return
        stores = self.dir / "stores"
        stores.mkdir(parents=True, exist_ok=True)
        self.ansible.run("collect", self._vars(), names)
        for h in self.hosts:
            path = stores / f"{h.host.name}.db"
            if not path.exists():
                continue
            src = Store(path)
            try:
                merge_store(src, self.store)
            finally:
                src.close()


def carried(plan: Plan, cells: Sequence[Cell]) -> tuple[Plan, list[dict[str, str]]]:
    """The plan as the hosts run it, and the files start.yml copies to each (`src` here,
    `dest` relative to the host's fsbench_dir, where its fsbench runs): every input file
    of the cells (Workload.input_params) is named by its copy, the same on every host,
    so each host's cells are the same cells."""
    names = checks.input_files(cells)
    copies = {name: f"{INPUTS}/{i}-{Path(name).name}" for i, name in enumerate(names)}
    if not copies:
        return plan, []

    def named(value: Any) -> Any:
        if isinstance(value, list):
            return [named(v) for v in value]
        return copies.get(value, value) if isinstance(value, str) else value

    specs = []
    for spec in plan.workloads:
        fields = {f for step in spec.steps for f in workloads.get(step).input_params}
        if fields:
            params = {k: named(v) if k in fields else v for k, v in spec.params.items()}
            params_at = {
                scale: {k: named(v) if k in fields else v for k, v in at.items()}
                for scale, at in spec.params_at.items()
            }
            spec = spec.model_copy(update={"params": params, "params_at": params_at})
        specs.append(spec)
    files = [{"src": str(Path(n).resolve()), "dest": d} for n, d in copies.items()]
    return plan.model_copy(update={"workloads": specs}), files


def _source_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """The source tree without what builds make: the engine's cargo output (its target
    directory, not src/fsbench/targets) and Python's byte code."""
    parts = info.name.split("/")
    if parts[1:3] == ["engine", "target"] or "__pycache__" in parts:
        return None
    return info


def _by_host(events: list[Event]) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for event in events:
        out.setdefault(event.host, []).append(event)
    return out


def _rc(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _last_line(data: dict[str, Any]) -> str:
    """fsbench's own one-line error ("fsbench: error: ...") or the output's last line."""
    for key in ("stderr", "stdout", "msg"):
        lines = [ln for ln in str(data.get(key) or "").splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("fsbench: error:")]
        if errors:
            return errors[-1].removeprefix("fsbench: error: ")
        if lines and key != "stdout":
            return lines[-1][:500]
    return ""
