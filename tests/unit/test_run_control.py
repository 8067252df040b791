"""The run-wide control (family.control_run, Benjamini & Bogomolov) as a property: a real
difference among 19 comparisons with none is still found as often as a test at alpha/20
would find it alone (Benjamini-Hochberg selects it whenever Bonferroni would), and never
more often than the uncorrected test; the 19 null comparisons get a false order in at most
alpha of runs. And equivalence (TOST) at the margin: a true ratio of exactly 1 + margin is
called equivalent in at most 5% of draws, at every n."""

from __future__ import annotations

import math
import random

import pytest

from fsbench.analysis.decisions import Side, at_level, evidence
from fsbench.analysis.design import Design
from fsbench.analysis.family import control_run

RUNS = 600
N = 5


def _comparison(rng: random.Random, ratio: float, key: str) -> object:
    a = tuple(rng.lognormvariate(0, 0.05) for _ in range(N))
    b = tuple(ratio * rng.lognormvariate(0, 0.05) for _ in range(N))
    found = evidence(
        [Side("a", a, tuple(range(1, N + 1))), Side("b", b, tuple(range(1, N + 1)))],
        better="lower",
        unit="s",
        design=Design(),
        key=(key,),
    )
    assert found is not None
    return found


def test_a_real_difference_among_nineteen_null_comparisons_is_found_as_bonferroni_would() -> None:
    rng = random.Random(34)
    found = alone_strict = alone = false_runs = 0
    for _ in range(RUNS):
        drafts = [_comparison(rng, 1.15, "real")] + [
            _comparison(rng, 1.0, f"null{i}") for i in range(19)
        ]
        p = drafts[0].pairs[0].p  # type: ignore[attr-defined]
        judged = {d.key[0]: d for d in control_run(drafts)}  # type: ignore[arg-type]
        ordered = judged["real"].kind == "order"
        # BH selects every comparison Bonferroni would, and no test orders what its own
        # uncorrected test would not.
        if p <= 0.05 / 20:
            assert ordered, p
        if ordered:
            assert p <= 0.05
        found += ordered
        alone_strict += p <= 0.05 / 20
        alone += at_level(drafts[0], 0.05).kind == "order"  # type: ignore[arg-type]
        false_runs += any(judged[f"null{i}"].kind == "order" for i in range(19))
    assert alone_strict <= found <= alone
    # The nulls, alongside one real difference, keep the family's promise (3 SE of MC).
    assert false_runs / RUNS <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / RUNS), false_runs


@pytest.mark.parametrize("n", [3, 5, 10])
def test_a_true_difference_at_the_margin_is_rarely_called_equivalent(n: int) -> None:
    rng = random.Random(n)
    design = Design(margin=0.05)
    equivalent = 0
    draws = 1500
    for _ in range(draws):
        a = tuple(rng.lognormvariate(0, 0.03) for _ in range(n))
        b = tuple(1.05 * rng.lognormvariate(0, 0.03) for _ in range(n))
        found = evidence(
            [Side("a", a, tuple(range(1, n + 1))), Side("b", b, tuple(range(1, n + 1)))],
            better="lower",
            unit="s",
            design=design,
        )
        assert found is not None
        equivalent += at_level(found, 0.05).pairs[0].kind == "equivalent"
    assert equivalent / draws <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / draws), equivalent


def test_a_metric_that_is_another_s_exact_reciprocal_is_one_hypothesis() -> None:
    """untar's MB/s of a fixed tree is its seconds' reciprocal: the same test with the same
    p, counted once by the run's control and judged as its twin is. A metric merely close
    to a reciprocal is a comparison of its own."""
    from fsbench.analysis.verdicts import evidence_all
    from tests.unit.test_reports_ranking import make_row

    seconds = {"a": [2.0, 2.1, 1.9, 2.05], "b": [3.0, 3.1, 2.95, 3.05]}
    rows = []
    for config, values in seconds.items():
        rows.append(make_row(config, values, workload="untar"))
        rows.append(
            make_row(
                config, [500.0 / v for v in values], "mb_per_s", "higher", "MB/s", None, "untar"
            )
        )
        near = [500.0 / v * (1 + 0.001 * i) for i, v in enumerate(values)]
        rows.append(make_row(config, near, "files_per_s", "higher", "files/s", None, "untar"))
        rows.append(make_row(config, [1.0, 1.02, 0.98, 1.01], workload="fio"))
    drafts = {d.metric if d.key[1] == "untar" else "fio": d for d in evidence_all(rows, Design())}
    assert drafts["mb_per_s"].twin_of == "seconds"
    assert drafts["files_per_s"].twin_of is None and drafts["seconds"].twin_of is None
    judged = {
        d.metric if d.key[1] == "untar" else "fio": d for d in control_run(list(drafts.values()))
    }
    # Three hypotheses (seconds, files/s, fio), not four: the two untar ones selected at
    # 5% x 2 / 3, the twin with them.
    assert judged["fio"].kind != "order"
    for metric in ("seconds", "mb_per_s", "files_per_s"):
        assert judged[metric].level == pytest.approx(0.05 * 2 / 3), metric
    assert judged["mb_per_s"].pairs[0].kind == judged["seconds"].pairs[0].kind == "order"
    assert judged["mb_per_s"].family_q == judged["seconds"].family_q
