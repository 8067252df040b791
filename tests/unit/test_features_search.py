"""The limit search the probes share (execute/features/search.py): growing sizes until one
is refused, then a binary search to the unit, against a limit known here."""

from __future__ import annotations

import errno

from fsbench.execute.features.search import first_refused, largest_accepted


def refusing_above(limit: int, tried: list[int]):  # type: ignore[no-untyped-def]
    def attempt(n: int) -> OSError | None:
        tried.append(n)
        return OSError(errno.EFBIG, "File too large") if n > limit else None

    return attempt


def test_the_first_refused_size_stops_the_steps_and_the_search_finds_the_limit() -> None:
    tried: list[int] = []
    seen: list[tuple[int, bool]] = []
    last, refused = first_refused(
        [16, 32, 64, 128], refusing_above(50, tried), lambda n, err: seen.append((n, err is None))
    )
    assert (last, refused and refused[0]) == (32, 64)
    assert refused is not None and refused[1].errno == errno.EFBIG
    assert tried == [16, 32, 64] and seen == [(16, True), (32, True), (64, False)]
    assert largest_accepted(32, 64, lambda n: refusing_above(50, [])(n) is None) == 50


def test_every_size_accepted_or_the_first_refused() -> None:
    assert first_refused([1, 2, 4], refusing_above(10, [])) == (4, None)
    last, refused = first_refused([255, 256], refusing_above(100, []))
    assert last is None and refused is not None and refused[0] == 255


def test_a_probe_that_does_not_apply_makes_every_feature_it_answers_n_a() -> None:
    """A probe with no recipe for this filesystem's family raises NotApplicable (known_for):
    every row it answers is n/a with the note, as a probe's own n/a results were."""
    from types import SimpleNamespace

    import pytest

    from fsbench.execute.features.base import NotApplicable, Probe, Setup, known_for
    from fsbench.execute.features.runner import _run_probe
    from fsbench.store.features import Feature

    scratch = SimpleNamespace(family="xfs", fs=SimpleNamespace(name="xfs"))
    assert known_for({"xfs": ("xfs_growfs",)}, scratch, "resize tool") == ("xfs_growfs",)  # type: ignore[arg-type]
    with pytest.raises(NotApplicable, match=r"^no quota recipe known for xfs \(see\)$"):
        known_for({"ext": "quota"}, scratch, "quota recipe", " (see)")  # type: ignore[arg-type]

    def run(s):  # type: ignore[no-untyped-def]
        return {"grow": known_for({}, s, "resize tool")}

    features = (Feature("grow", "Grows?"), Feature("shrink", "Shrinks?"))
    found = _run_probe(Probe(name="toy", features=features, run=run, setup=Setup()), scratch)  # type: ignore[arg-type]
    assert {n: (r.supported, r.note) for n, r in found.items()} == {
        "grow": ("n/a", "no resize tool known for xfs"),
        "shrink": ("n/a", "no resize tool known for xfs"),
    }
