"""The search of the probes that find a limit (file size, name length, xattr size): sizes
tried in growing steps until one is refused, then a binary search between the last
accepted and the first refused, to the unit."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# A try of one size: None when accepted, else the kernel's refusal.
Attempt = Callable[[int], OSError | None]


def first_refused(
    sizes: Iterable[int],
    attempt: Attempt,
    on_try: Callable[[int, OSError | None], None] = lambda n, err: None,
) -> tuple[int | None, tuple[int, OSError] | None]:
    """`sizes` (growing) tried in turn until one is refused: the last accepted (None when
    the first was refused), and the first refused with its refusal (None when all were
    accepted)."""
    good = None
    for n in sizes:
        err = attempt(n)
        on_try(n, err)
        if err is not None:
            return good, (n, err)
        good = n
    return good, None


def largest_accepted(good: int, bad: int, accepts: Callable[[int], bool]) -> int:
    """The largest n that `accepts`, to the unit, given that `good` is accepted and `bad`
    (> good) is not: a binary search between them (the next one up is refused)."""
    while bad - good > 1:
        mid = (good + bad) // 2
        if accepts(mid):
            good = mid
        else:
            bad = mid
    return good
