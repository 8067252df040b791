"""`fsbench bisect`: drive `git bisect` in the user's Linux tree with a statistical gate.

    endpoints: build good and bad, measure each to the budget (the same guest at every
      step: accelerator, CPUs, memory), compare their configs for confounders, refuse in
      one line when their difference is below what the noise lets the budget detect
    steps: git bisect start BAD GOOD, then for each commit git checks out: build (a
      failure is `git bisect skip`, its reason stored), measure in guests of a few
      repetitions each until the gate (analysis/bisect_gate.py) decides or the budget
      is spent; good / bad marks it, undecided stops with the range left
    end: the endpoints measured again (MIN_REPS each), checked against the first ones

git runs as argv lists in the user's tree; its bisect log is an ordinary `git bisect log`
(`git bisect replay` takes it) and is left in place, as `git bisect run` leaves it. Every
trial is stored in one run of the run kind `bisect` (BISECT in vm/bisect_kind.py,
registered with the VM target's plugins: its facts `BisectFacts`, its report
reports/bisect.py) as it comes back, each commit's trials with the knob kernel=<commit>;
a build that failed is a
`failed` record with the compiler's words. `Bisection` is the kind's driver: its run lives
through the one session every run has (execute/session.py), and a killed bisection goes on
(`fsbench resume`, `fsbench bisect --resume`) from its stored facts alone: the tree, the
endpoints, the metric, the budget and the build are in them, the evidence is the store's,
the marks are the tree's bisect log.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from fsbench import vm, workloads
from fsbench.analysis import bisect_gate
from fsbench.analysis.bisect_gate import BAD, GOOD, UNDECIDED, Verdict
from fsbench.analysis.design import MIN_REPS
from fsbench.execute.git import Git
from fsbench.execute.hooks import View
from fsbench.execute.loop import stored_plan
from fsbench.execute.session import Driver, Life, NewRun
from fsbench.plan import model as planning
from fsbench.plan.model import Cell, Plan
from fsbench.store.records import RunRecord, TrialRecord, now
from fsbench.store.results import Store
from fsbench.store.values import better_of, counted_values, unit_of
from fsbench.system import knobs
from fsbench.system.errors import FsbenchError
from fsbench.vm import kconfigs, qemu
from fsbench.vm.bisect_kind import (
    BISECT,
    EXIT_UNDECIDED,
    BisectArgs,
    BisectFacts,
    NoValues,
    Outcome,
    Refused,
    Step,
)
from fsbench.vm.kbuild import Built, KernelBuilder, confounders, read_config
from fsbench.vm.records import record_for
from fsbench.vm.target import VmTargetSpec

FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
LOGGED_FIRST_BAD = re.compile(r"^# first bad commit: \[([0-9a-f]{40})\]", re.M)
Log = Callable[[str], None]


class Lines(View):
    """A bisection's live view: a line for each thing it does."""

    def __init__(self, say: Log) -> None:
        self.say = say

    def note(self, text: str) -> None:
        self.say(text)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Bisection(Driver):
    """One bisection (the bisect kind's driver): its plan (one filesystem config, one
    workload), its store run."""

    kind = BISECT

    def __init__(
        self,
        store: Store,
        args: BisectArgs,
        plan: Plan,
        cells: list[Cell],
        *,
        overrides: Mapping[str, list[str]] | None = None,
        record: RunRecord | None = None,
        log: Log = _stderr,
    ) -> None:
        if len(cells) != 1:
            raise FsbenchError(
                f"fsbench bisect measures one cell (one --fs config, one --workload, no "
                f"sweep); these flags make {len(cells)}"
            )
        if not isinstance(plan.target, VmTargetSpec):
            raise FsbenchError("fsbench bisect runs in the VM target")
        self.args, self.plan, self.cell, self.store = args, plan, cells[0], store
        self.overrides, self.record = dict(overrides or {}), record
        self.say, self.view = log, Lines(log)
        self.git = Git(args.linux.resolve())
        self.metric = args.metric or workloads.get(self.cell.steps[-1][0]).headline[0]
        self.builder = KernelBuilder(args.linux, args.kbuild_cache, args.config, args.jobs, log)
        self.seq = 0
        self.checked_out = ""  # what the tree had checked out before (a refusal restores it)
        self.earlier_seconds = 0.0  # a resumed run's time before it stopped
        self.t0 = time.monotonic()
        self.stored: list[TrialRecord] = []  # what a resumed run had stored
        self.run_id = 0
        self.accel = ""
        self.better = ""
        self.unit = ""
        self.good, self.bad = args.good, args.bad
        self.outcome: Outcome | None = None
        if record is not None:
            self.earlier_seconds = float(record.facts.get("seconds") or 0.0)
            self.accel = str(record.target.get("accel") or "auto")
            self.stored = store.get_trials(record.id)
            self.seq = max((t.seq for t in self.stored), default=-1) + 1

    @classmethod
    def resume(cls, store: Store, record: RunRecord) -> Bisection:
        """Goes on with a killed bisection from its facts alone: the evidence stored so
        far is kept, the marks are the tree's `git bisect log`."""
        facts = BisectFacts.model_validate(record.facts)
        plan = stored_plan(record)
        cells = planning.expand(plan, record.overrides)
        if facts.cell:  # one cell of a plan that makes several (a change point of history)
            cells = [c for c in cells if c.key == facts.cell]
        args = BisectArgs.of(facts)
        return cls(store, args, plan, cells, overrides=record.overrides, record=record)

    @classmethod
    def exit_code(cls, store: Store, record: RunRecord) -> int:
        """6 when no first bad commit was named (a refusal is 5: Refused)."""
        return EXIT_UNDECIDED if not record.facts.get("first_bad") else 0

    # -- measuring ---------------------------------------------------------------------

    def _vm_spec(self, bzimage: Path) -> Any:
        t = self.plan.target
        assert isinstance(t, VmTargetSpec)
        return vm.VmSpec(
            kernel=str(bzimage),
            ram_mb=t.guest_ram_mb,
            vcpus=t.vcpus,
            scratch_bytes=t.image_size,
            throttle=dict(t.throttle),
            workdir=t.workdir,
            accel=self.accel,
        )

    def _cell(self, commit: str) -> Cell:
        return replace(self.cell, knobs={**self.cell.knobs, knobs.KERNEL: commit[:12]})

    def measure(self, step: Step, bzimage: Path, reps: int) -> None:
        """`reps` more repetitions of the cell under this kernel, in one guest (a warm-up
        first when the plan has one); every record stored as it comes back."""
        cell = self._cell(step.commit)
        first = len(step.values) + 1
        wanted = list(range(first, first + reps))
        if self.plan.warmup:
            wanted.insert(0, 0)
        vcells: list[Any] = []
        for rep in wanted:
            vcells.append(vm.VmCell.of(self.seq, rep, cell, len(vcells) + 1))
            step.seqs.append(self.seq)
            self.seq += 1
        job = vm.VmJob(
            vcells,
            str(self.plan.scale),
            self.plan.timeout,
            self.plan.model_dump(mode="json", by_alias=True),
        )
        t0 = time.monotonic()
        self.say(f"  measuring {step.commit[:12]}: repetitions {first}..{first + reps - 1}")
        result = vm.run_in_vm(job, self._vm_spec(bzimage))
        step.measure_seconds += time.monotonic() - t0
        records = vm.import_records(result)
        self.store.record_trials(self.run_id, records)
        new = self.values(records)
        step.values += new
        if not new:
            why = result.error.splitlines()[0] if result.error else ""
            failed = next((r.message for r in records if r.status != "ok" and r.message), "")
            raise NoValues(f"{step.commit[:12]}: no {self.metric}: {why or failed or '?'}")

    def values(self, records: list[TrialRecord]) -> list[float]:
        """The metric's counted values in `records` (and its unit and direction, once seen)."""
        found = counted_values(records, self.metric)
        if found:
            self.better = better_of(records, self.metric) or self.better
            self.unit = unit_of(records, self.metric)
        return found

    # -- building ----------------------------------------------------------------------

    def build(self, step: Step) -> Built:
        built = self.builder.build(step.commit)
        step.build_seconds += built.seconds
        step.build_cpu_seconds += built.cpu_seconds
        step.kernel_of = built.same_as
        if built.ok and built.same_as:
            self.say(
                f"  {step.commit[:12]} runs the kernel of {built.same_as[:12]} ({built.version}):"
                " they differ only in files no build reads"
            )
        elif built.ok:
            self.say(
                f"  built {step.commit[:12]} ({built.version}) in {built.seconds:.0f} s"
                f" ({built.cpu_seconds:.0f} CPU seconds)"
            )
        return built

    def _failed(self, step: Step, reason: str) -> None:
        """A commit that did not build or boot: a failed record, for the report."""
        cell = self._cell(step.commit)
        message = reason.splitlines()[0][:300] if reason else "failed"
        record = record_for(
            cell, self.seq, 1, "failed", message=message, detail=reason, finished_at=now()
        )
        self.seq += 1
        self.store.record_trials(self.run_id, [record])

    # -- the bisection -----------------------------------------------------------------

    def gate(self, good: Step, bad: Step, step: Step) -> Verdict:
        return bisect_gate.gate(
            good.values,
            bad.values,
            step.values,
            better=self.better,
            n_max=self.args.max_reps,
            unit=self.unit,
            margin=self.plan.margin,
        )

    def start(self) -> NewRun:
        """A new bisection (the tree must not be bisecting already)."""
        if self.git.bisecting():
            raise FsbenchError(
                f"{self.git.tree} is bisecting already: --resume continues it, "
                "`git bisect reset` ends it"
            )
        dirty = self.git.dirty()
        if dirty:
            raise FsbenchError(f"{self.git.tree} has changes ({dirty[0].strip()}): commit them")
        self.good, self.bad = self.git.commit(self.args.good), self.git.commit(self.args.bad)
        self.checked_out = self.git.branch()
        # Decided once: every step runs under the same accelerator (KVM, or TCG when KVM
        # does not work here), never KVM for some commits and TCG for others.
        self.accel, accel_facts = self.decide_accel()
        args = self.args
        return NewRun(
            name=f"bisect {self.good[:12]}..{self.bad[:12]}",
            plan=self.plan,
            overrides=self.overrides,
            target=self._target(accel_facts),
            facts=BisectFacts(
                linux=str(self.git.tree),
                good=self.good,
                bad=self.bad,
                metric=self.metric,
                max_reps=args.max_reps,
                config=kconfigs.stored(args.config),
                build_dir=str(self.builder.out),
                cell=self.cell.key,
                chunk=args.chunk,
                jobs=args.jobs,
                kbuild_cache=str(args.kbuild_cache),
                recheck=args.recheck,
            ),
        )

    def decide_accel(self) -> tuple[str, dict[str, Any]]:
        """KVM if the guests' default kernel runs under it (the commits' kernels are not
        built yet), else TCG."""
        image = vm.ensure_image(None, vm.VmSpec().cache_dir)
        return qemu.resolve_accel("auto", image.kernel)

    def body(self, life: Life) -> None:
        """The bisection, from its endpoints (a resumed one: its stored evidence, the
        tree's bisect log)."""
        self.run_id = life.run_id
        self.outcome = self._run(self.good, self.bad)

    def _target(self, accel: dict[str, Any]) -> dict[str, Any]:
        t = self.plan.target
        assert isinstance(t, VmTargetSpec)
        return {
            "kind": "vm",
            "summary": f"QEMU guest ({self.accel}, {t.vcpus} vCPUs, {t.guest_ram_mb} MiB) "
            f"per commit of {self.git.tree}",
            "accel": self.accel,
            "accel_facts": accel,
            "vcpus": t.vcpus,
            "guest_ram_mb": t.guest_ram_mb,
        }

    def _stored(self, step: Step) -> Step:
        """The step with the values already stored for its commit (a resumed run)."""
        mine = [t for t in self.stored if t.knobs.get(knobs.KERNEL) == step.commit[:12]]
        step.values = self.values(mine)
        step.seqs = [t.seq for t in mine]
        return step

    def _endpoint_kernel(self, step: Step) -> Path:
        """An endpoint's bzImage: kept by commit id, or its commit checked out and built
        (a resumed bisection's checkout is put back)."""
        head = self.git.head()
        self.git.run("checkout", "-q", "--detach", step.commit)
        try:
            built = self.build(step)
        finally:
            if self.git.bisecting():
                self.git.run("checkout", "-q", "--detach", head)
        if not built.ok or built.bzimage is None:
            self._failed(step, built.error)
            raise FsbenchError(f"the {step.role} endpoint {step.commit[:12]} does not build")
        return built.bzimage

    def _endpoints(self, good_sha: str, bad_sha: str, n: int) -> tuple[Step, Step]:
        """Both endpoints to n repetitions, in alternating guests (a chunk of good, a chunk
        of bad, ...): a drift of the machine in time falls on both, not on one."""
        good, bad = self._stored(Step(good_sha, GOOD)), self._stored(Step(bad_sha, BAD))
        kernels = {GOOD: self._endpoint_kernel(good), BAD: self._endpoint_kernel(bad)}
        while any(len(s.values) < n for s in (good, bad)):
            for step in (good, bad):
                reps = min(max(self.args.chunk, 1), n - len(step.values))
                if reps > 0:
                    self.measure(step, kernels[step.role], reps)
        return good, bad

    def _run(self, good_sha: str, bad_sha: str) -> Outcome:
        self.t0 = time.monotonic()
        out = Outcome(self.run_id)
        n = self.args.max_reps
        self.say(f"endpoints: good {good_sha[:12]}, bad {bad_sha[:12]} ({n} repetitions each)")
        good, bad = self._endpoints(good_sha, bad_sha, n)
        out.steps += [good, bad]
        out.confounders = confounders(self._config(good_sha), self._config(bad_sha))
        for line in out.confounders:
            self.say(f"  config differs between the endpoints: {line}")
        refused = bisect_gate.refusal(
            good.values,
            bad.values,
            better=self.better,
            n_max=n,
            unit=self.unit,
            margin=self.plan.margin,
        )
        if refused is not None:
            out.stopped = refused.line
            self.save(out)
            if self.checked_out and not self.git.bisecting():
                self.git.run("checkout", "-q", self.checked_out)
            raise Refused(refused.line)
        if self.git.bisecting():  # resumed
            said = self.git.log()
        else:
            said = self.git.run("bisect", "start", bad_sha, good_sha).output
        out.steps += self._marked(good_sha, bad_sha)
        found = FIRST_BAD.search(said) or LOGGED_FIRST_BAD.search(said)
        if found:  # adjacent endpoints, or a resumed bisection that had ended
            out.first_bad = found.group(1)
        else:
            self._steps(good, bad, out)
        if self.args.recheck:
            self._recheck(good, bad, out)
        out.log = self.git.log()
        self.save(out)
        return out

    def save(self, out: Outcome) -> None:
        """The bisection's facts into its run's target: what the report reads."""
        record = self.store.get_run(self.run_id)
        facts = dict(record.facts)
        first = None
        if out.first_bad:
            subject, date = self.git.subject(out.first_bad)
            first = {"commit": out.first_bad, "subject": subject, "date": date}
        out.seconds = time.monotonic() - self.t0 + self.earlier_seconds
        facts.update(
            unit=self.unit,
            better=self.better,
            first_bad=first,
            stopped=out.stopped,
            range_left=out.range_left,
            confounders=out.confounders,
            steps=[{k: v for k, v in s.as_dict().items() if k != "values"} for s in out.steps],
            log=out.log or self.git.log(),
            order=self._history(out),
            seconds=round(out.seconds, 1),
        )
        self.store.set_facts(self.run_id, BisectFacts.model_validate(facts).model_dump(mode="json"))

    def _marked(self, good_sha: str, bad_sha: str) -> list[Step]:
        """The steps the bisect log marked already (a resumed run), with their values."""
        out = []
        for verdict, commit in re.findall(
            r"^git bisect (good|bad|skip) ([0-9a-f]{40})$", self.git.log(), re.M
        ):
            if commit not in (good_sha, bad_sha):
                out.append(replace(self._stored(Step(commit, "step")), verdict=verdict))
        return out

    def _steps(self, good: Step, bad: Step, out: Outcome) -> None:
        while True:
            commit = self.git.head()
            step = self._stored(Step(commit, "step"))
            out.steps.append(step)
            subject, _ = self.git.subject(commit)
            self.say(f"step {len(out.steps) - 2}: {commit[:12]} {subject}")
            built = self.build(step)
            if not built.ok:
                step.verdict, step.error = "skip", built.error
                first = (built.error.splitlines() or ["?"])[0]
                self.say(f"  does not build: git bisect skip ({first})")
                self._failed(step, built.error)
                said = self.git.mark("skip", commit)
            else:
                assert built.bzimage is not None
                try:
                    verdict = self._decide(good, bad, step, built.bzimage)
                except NoValues as exc:  # did not boot, or the workload fails on it
                    step.verdict, step.error = "skip", str(exc)
                    self.say(f"  no measurement: git bisect skip ({exc})")
                    said = self.git.mark("skip", commit)
                    verdict = None
                if verdict is None:
                    pass
                elif verdict.verdict == UNDECIDED:
                    step.verdict = UNDECIDED
                    out.stopped = (
                        f"{commit[:12]} stayed undecided at n={verdict.n} ({verdict.note}): "
                        "the range left is in the bisect log"
                    )
                    out.range_left = self._range_left()
                    return
                else:
                    said = self.git.mark(verdict.verdict, commit)
            self.save(out)
            found = FIRST_BAD.search(said)
            if found:
                out.first_bad = found.group(1)
                return
            if "only 'skip'ped commits left" in said or "There are only" in said:
                out.stopped = said.strip().splitlines()[0]
                out.range_left = self._range_left()
                return

    def _decide(self, good: Step, bad: Step, step: Step, bzimage: Path) -> Verdict:
        reps = max(1, MIN_REPS - len(step.values))
        while True:
            self.measure(step, bzimage, reps)
            verdict = self.gate(good, bad, step)
            step.gate = verdict
            self.say(
                f"  n={verdict.n} mean {verdict.mean:.4g} {self.unit}: {verdict.verdict}"
                f" ({verdict.note})"
            )
            if verdict.decided or len(step.values) >= self.args.max_reps:
                step.verdict = verdict.verdict
                return verdict
            reps = min(self.args.chunk, self.args.max_reps - len(step.values))

    def _recheck(self, good: Step, bad: Step, out: Outcome) -> None:
        """The endpoints again, judged as a step is (MIN_REPS, more while undecided, up to
        --max-reps): a drift of the machine shows here."""
        for role, ref in ((GOOD, good), (BAD, bad)):
            step = Step(ref.commit, f"recheck-{role}")
            built = self.builder.build(ref.commit)  # cached: no make
            assert built.bzimage is not None
            self.say(f"recheck {role}: {ref.commit[:12]}")
            self._decide(good, bad, step, built.bzimage)
            out.steps.append(step)
            if step.verdict != role:
                self.say(f"  warning: the {role} endpoint measured again is {step.verdict}")

    def _config(self, commit: str) -> dict[str, str]:
        path = self.builder.dir / "kernels" / commit / ".config"
        return read_config(path) if path.is_file() else {}

    def _history(self, out: Outcome) -> list[str]:
        """The commits tested, in history order (good first): the chart's x axis."""
        if len(out.steps) < 2:
            return []
        good, bad = out.steps[0].commit, out.steps[1].commit
        tested = {s.commit for s in out.steps}
        res = self.git.run("rev-list", "--reverse", "--topo-order", f"{good}..{bad}", check=False)
        return [good] + [c for c in res.stdout.split() if c in tested and c != good]

    def _range_left(self) -> list[str]:
        res = self.git.run("bisect", "visualize", "--format=%H", check=False)
        return res.stdout.split() if res.ok else []
