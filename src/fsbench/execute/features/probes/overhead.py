"""Space an empty filesystem takes from its device before the first file is written."""

from __future__ import annotations

import os

from fsbench.execute.features.base import Evidence, Probe, Scratch, Setup
from fsbench.store.features import Feature, Result
from fsbench.system import numbers

OVERHEAD = Feature(
    "space lost when empty",
    "How much of the device is not available to files right after mkfs (device − df's "
    "available; df's size − available and size − free in the note)?",
    quantity=True,
)


def run(s: Scratch) -> dict[str, Result]:
    ev = Evidence()
    res = s.run(["df", "-B1", "--output=size,used,avail", str(s.mnt)], ev, timeout=30)
    st = os.statvfs(s.mnt)
    size = st.f_blocks * st.f_frsize
    free = st.f_bfree * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    device = s.image_size
    ev.say(
        f"statvfs: f_blocks={st.f_blocks} f_bfree={st.f_bfree} f_bavail={st.f_bavail} "
        f"f_frsize={st.f_frsize}; device {device} bytes"
    )
    note = (
        f"size − available {numbers.exact_size(size - avail)}, "
        f"size − free {numbers.exact_size(size - free)}, "
        f"device − size {numbers.exact_size(device - size)} (df size {numbers.exact_size(size)})"
    )
    if not res.ok:
        note += "; df failed"
    return {OVERHEAD.name: ev.result("yes", device - avail, "B", note)}


PROBE = Probe(name="overhead", features=(OVERHEAD,), run=run, setup=Setup())
