"""The keys of a run's host provenance: one registry (pyperf's `_metadata.py` is the model).

`hostfacts.host` collects them when a run starts, the store keeps them as JSON (`runs.host`),
and every reader takes them from here: a run's `host` is a `Host`, each key a typed attribute
whose annotation carries its `Fact` (what it means, its unit, its check and its formatter).
Reports print a fact through its key's one formatter (`Host.shown`) and compose the lines
around it themselves.

- **Written** (`Host.write`): a key the registry lacks, a value of another type, or one that
  fails its key's check is refused in one line, where the facts are made.
- **Read back** (`Host.read`): a run stored by an older fsbench may lack keys (None) or hold
  keys this one does not know (kept, as stored); a value that fails its check is kept as
  stored and flagged (`Host.flagged`), never fatal to a report. `Host.stored` is the record
  exactly as the store holds it (the JSON report prints it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, TypeAdapter, ValidationError

from fsbench.system import numbers
from fsbench.system.errors import FsbenchError


@dataclass(frozen=True)
class Check:
    test: Callable[[Any], bool]
    says: str  # what a value that passes is: "a positive count"


def _line(value: Any) -> bool:
    return value != "" and "\n" not in str(value)


def _versions(value: Any) -> bool:
    return all(k and (v is None or _line(v)) for k, v in value.items())


ANY = Check(lambda _: True, "")  # its type says it all
LINE = Check(_line, "one line of text")
POSITIVE = Check(lambda n: n > 0, "a positive number")
AT_LEAST_ZERO = Check(lambda n: n >= 0, "a number at least 0")
PERCENT = Check(lambda s: s.isdigit() and int(s) <= 100, "a whole percentage (0-100)")
VERSIONS = Check(_versions, "command -> one line of version text (or null)")


def _tools_text(tools: Mapping[str, str | None]) -> str:
    return "; ".join(f"{name}: {version or 'not found'}" for name, version in sorted(tools.items()))


@dataclass(frozen=True)
class Fact:
    """A key's registry entry beside its type (the annotation of its `Host` field)."""

    meaning: str
    check: Check = LINE
    format: Callable[[Any], str] = str  # the value as every report prints it
    unit: str = ""


class Host(BaseModel):
    """The facts of the machine that made a run (system/hostfacts.py writes them). Every key
    is optional: a run stored before it was collected reads None."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    hostname: Annotated[str | None, Fact("the machine's name (gethostname)")] = None
    kernel: Annotated[str | None, Fact("the running kernel's release (uname -r)")] = None
    kernel_version: Annotated[str | None, Fact("the kernel's build string (uname -v)")] = None
    machine: Annotated[str | None, Fact("the architecture (uname -m)")] = None
    cpu: Annotated[str | None, Fact("the CPU's model name (/proc/cpuinfo)")] = None
    cpus: Annotated[int | None, Fact("CPUs online (os.cpu_count)", POSITIVE, unit="CPUs")] = None
    memory_bytes: Annotated[
        int | None, Fact("memory (MemTotal of /proc/meminfo)", POSITIVE, numbers.size, "bytes")
    ] = None
    cpufreq_governor: Annotated[
        str | None, Fact("cpu0's cpufreq scaling governor (null: no cpufreq)")
    ] = None
    cpuidle_driver: Annotated[str | None, Fact("the cpuidle driver (null: none)")] = None
    cpu_latency_us: Annotated[
        int | None,
        Fact(
            "the CPU wake-up latency the kernel held the CPUs to as the run began (PM QoS, "
            "/dev/cpu_dma_latency: 0 with cpu_idle = shallow; null: unreadable)",
            AT_LEAST_ZERO,
            unit="us",
        ),
    ] = None
    dirty_ratio: Annotated[
        str | None, Fact("vm.dirty_ratio, as /proc/sys/vm reads", PERCENT, unit="%")
    ] = None
    dirty_background_ratio: Annotated[
        str | None, Fact("vm.dirty_background_ratio, as /proc/sys/vm reads", PERCENT, unit="%")
    ] = None
    free_page_reporting: Annotated[
        bool | None,
        Fact("a virtio balloon reports free memory to the hypervisor (hostfacts)", ANY),
    ] = None
    python: Annotated[str | None, Fact("the Python that ran fsbench")] = None
    fsbench_version: Annotated[str | None, Fact("the fsbench that made the run")] = None
    fsbench_commit: Annotated[str | None, Fact("its checkout's commit (null: none)")] = None
    tools: Annotated[
        dict[str, str | None] | None,
        Fact("the filesystems' and workloads' tools: command -> version", VERSIONS, _tools_text),
    ] = None

    _stored: dict[str, Any] | None = PrivateAttr(default=None)
    _flagged: dict[str, str] = PrivateAttr(default_factory=dict)

    @classmethod
    def write(cls, facts: Mapping[str, Any]) -> Host:
        """Facts as they are made: anything the registry would not read back as written is
        refused (FsbenchError, one line)."""
        for name, value in facts.items():
            key = KEYS.get(name)
            if key is None:
                raise FsbenchError(f"host fact {name!r} is not in fsbench.system.hostkeys")
            wrong = key.refuses(value)
            if wrong:
                raise FsbenchError(f"host fact {wrong}")
        return cls._made(facts, {})

    @classmethod
    def read(cls, stored: Mapping[str, Any] | None) -> Host:
        """Facts as a store holds them, from any fsbench: missing keys are None, unknown
        ones kept, a value that fails its key's check kept as stored and flagged."""
        facts = dict(stored or {})
        flagged = {
            name: wrong
            for name, value in facts.items()
            if name in KEYS and (wrong := KEYS[name].refuses(value))
        }
        return cls._made(facts, flagged)

    @classmethod
    def _made(cls, facts: Mapping[str, Any], flagged: dict[str, str]) -> Host:
        host = cls.model_validate({k: v for k, v in facts.items() if k not in flagged})
        host._stored = dict(facts)
        host._flagged = flagged
        return host

    def stored(self) -> dict[str, Any]:
        """The record as the store holds it (its keys in their order, flagged values too)."""
        if self._stored is None:  # made field by field, not read or written
            return self.model_dump(exclude_unset=True)
        return dict(self._stored)

    def value(self, name: str) -> Any:
        """The fact `name` (a registry key: KeyError for another), typed; None when the run
        did not keep it (or kept a value flagged unreadable)."""
        return getattr(self, KEYS[name].name)

    def shown(self, name: str) -> str | None:
        """The fact `name` (a registry key) as every report prints it, by its key's one
        formatter; None when the run did not keep it (or kept a value flagged unreadable)."""
        value = self.value(name)
        return None if value is None else KEYS[name].fact.format(value)

    @property
    def flagged(self) -> dict[str, str]:
        """Key -> why its stored value could not be read (a store of another fsbench)."""
        return dict(self._flagged)

    def others(self) -> dict[str, Any]:
        """What the registry does not read, as stored: keys another fsbench kept, and the
        values flagged unreadable."""
        return {k: v for k, v in self.stored().items() if k not in KEYS or k in self._flagged}


@dataclass(frozen=True)
class Key:
    """A registry key: its name, its type (its `Host` field's annotation) and its `Fact`."""

    name: str
    type: Any  # `str | None`: None is a fact not collected (no cpufreq, not a checkout)
    fact: Fact
    # Its type, strictly: a stored "2" is no count of CPUs, nor is True.
    strict: TypeAdapter[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "strict", TypeAdapter(self.type, config=ConfigDict(strict=True)))

    def refuses(self, value: Any) -> str:
        """Why `value` cannot be this key's ("" when it can): its type, then its check."""
        if value is None:
            return ""
        try:
            self.strict.validate_python(value)
        except ValidationError:
            return f"{self.name!r} = {value!r} is not {_type_name(self.type)}"
        if not self.fact.check.test(value):
            return f"{self.name!r} = {value!r} is not {self.fact.check.says}"
        return ""


def _type_name(kind: Any) -> str:
    parts = [p for p in getattr(kind, "__args__", (kind,)) if p is not type(None)]
    return " or ".join(str(p) if hasattr(p, "__args__") else p.__name__ for p in parts)


def _keys() -> dict[str, Key]:
    out = {}
    for name, info in Host.model_fields.items():
        (fact,) = (m for m in info.metadata if isinstance(m, Fact))
        out[name] = Key(name, info.annotation, fact)
    return out


KEYS: dict[str, Key] = _keys()
