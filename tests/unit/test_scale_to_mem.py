"""Working sets sized to memory (`scale_to_mem`): fio's data set and the personalities'
main fileset as a multiple of the memory a step may use, the same sizing in the check
that refuses a run the target cannot hold; and the steady-state rule's verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fsbench.analysis import steady
from fsbench.execute.executors.base import check_fits
from fsbench.plan.model import Cell, FsConfig
from fsbench.reports.compare.cells import cell_key
from fsbench.system.errors import FsbenchError
from fsbench.workloads.fio import Fio
from fsbench.workloads.fio.profiles import FioParams
from fsbench.workloads.personalities import Fileserver, PersonalityParams
from tests.unit.test_reports_charts import make_row

MIB = 1 << 20


def fio(**params: Any) -> FioParams:
    return FioParams.model_validate({"size": "64M", "runtime": 1, **params})


def test_fio_data_set_is_a_multiple_of_memory() -> None:
    wl = Fio()
    assert wl.for_memory(fio(), 256 * MIB) == fio()  # not asked: size as given
    sized = wl.for_memory(fio(scale_to_mem=2), 256 * MIB)
    assert sized.size == 512 * MIB and sized.scale_to_mem == 2
    assert wl.required_bytes(sized) == 512 * MIB + 64 * MIB
    # whole MiB, at least one
    assert wl.for_memory(fio(scale_to_mem=0.3), 1000 * MIB + 5).size == 300 * MIB
    assert wl.for_memory(fio(scale_to_mem=0.001), 64 * MIB).size == MIB
    # the per-thread rule holds for the sized data set
    with pytest.raises(ValidationError, match="under 1 MiB each"):
        wl.for_memory(fio(scale_to_mem=0.01, threads=8), 256 * MIB)
    with pytest.raises(ValidationError, match="a job file sizes its own"):
        fio(profile="job=/tmp/x.fio", scale_to_mem=2)


def test_personality_fileset_is_a_multiple_of_memory() -> None:
    wl = Fileserver()
    plain = PersonalityParams()
    assert wl.for_memory(plain, 1 << 30) == plain and wl.required_bytes(plain) == 0
    sized = wl.for_memory(PersonalityParams(scale_to_mem=0.5), 1 << 30)
    assert sized.size == 512 * MIB
    assert wl.required_bytes(sized) == 512 * MIB + 128 * MIB + 64 * MIB
    assert wl.required_bytes(PersonalityParams.model_validate({"size": "1G"})) > 1 << 30


def _cell(knobs: dict[str, str], **params: Any) -> Cell:
    return Cell(
        FsConfig(type="ext4"),
        "fio",
        {"profile": "seq-write", "size": "64M", "runtime": 1, **params},
        knobs,
    )


def test_the_fit_check_sizes_as_the_trial_will() -> None:
    gib = 1 << 30
    capped = _cell({"mem": "256M"}, scale_to_mem=4)  # 1 GiB of data
    check_fits([capped], 2 * gib, machine_mem=64 * gib)  # the knob, not the machine
    with pytest.raises(FsbenchError, match="needs 1.1 GiB"):
        check_fits([capped], gib, machine_mem=None)
    uncapped = _cell({}, scale_to_mem=2)
    check_fits([uncapped], 2 * gib, machine_mem=512 * MIB)
    with pytest.raises(FsbenchError, match="needs 8.8 GiB"):
        check_fits([uncapped], 2 * gib, machine_mem=4 * gib)
    # the machine's memory unknown here (a fleet's controller): its hosts check
    check_fits([uncapped], 2 * gib, machine_mem=None)


def test_steady_verdicts() -> None:
    t = [float(i) for i in range(8)]
    ramp = [10.0, 50.0, 90.0, 100.0, 101.0, 99.0, 100.0, 100.0]
    got = steady.steady_state(t, ramp, window=3)
    # 90, 100, 101 is within the spread but still climbing: steady from 100 on.
    assert (got.reached, got.start_s, got.judged) == (True, 3.0, True)
    assert got.mean == pytest.approx(sum(ramp[3:]) / 5)
    assert steady.steady_state(t, ramp, window=3, require="spread").start_s == 2.0
    # An oscillation with no slope is not steady unless the user asks for the slope alone.
    wave = [50.0, 150.0] * 4
    assert steady.steady_state(t, wave, window=5).reached is False
    assert steady.steady_state(t, wave, window=5, require="slope").reached is True
    with pytest.raises(ValueError, match="one of both, spread, slope"):
        steady.steady_state(t, wave, window=4, require="either")
    falling = [100.0, 80.0, 60.0, 40.0, 20.0, 10.0, 5.0, 2.0]
    assert steady.steady_state(t, falling, window=3).as_dict()["reached"] is False
    assert steady.steady_state(t, falling, window=3).judged is True
    short = steady.steady_state(t[:2], ramp[:2], window=3)
    assert (short.reached, short.judged, short.start_s) == (False, False, None)


def test_a_run_from_before_scale_to_mem_compares_with_one_after() -> None:
    before = make_row("ext4", [1.0, 1.1], "write_mib_s", {"profile": "seq-write"}, "fio")
    after = make_row(
        "ext4", [1.0, 1.1], "write_mib_s", {"profile": "seq-write", "scale_to_mem": None}, "fio"
    )
    assert cell_key(before) == cell_key(after)
    swept = make_row(
        "ext4", [1.0], "write_mib_s", {"profile": "seq-write", "scale_to_mem": 2}, "fio"
    )
    assert cell_key(swept) != cell_key(before)
