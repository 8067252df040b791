"""The binary search of the probes that find a limit (file size, name length, xattr
size) to the unit."""

from __future__ import annotations

from collections.abc import Callable


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
