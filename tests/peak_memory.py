"""How far a block of code makes this process's memory peak above where it stood.

On Linux, the resident set's high-water mark: reset to the current resident size by
writing 5 to /proc/self/clear_refs, then read as VmHWM from /proc/self/status. It costs
nothing, where tracemalloc (the fallback elsewhere) makes the code under it about three
times slower: a Pilot test of the whole app under tracemalloc took 3-4 s, 1-1.5 s
without. It counts the pages the block touched (Python objects, numpy arrays filled
with data), not address space reserved and never written: `address_space_limit`
catches those (``np.zeros`` of 8 GiB touches a few pages of it).
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Iterator

_CLEAR_REFS = "/proc/self/clear_refs"
_STATUS = "/proc/self/status"


class PeakMemory:
    """The peak growth measured by `peak_memory`, in bytes (`growth`, set on exit)."""

    growth = 0


def _resident_kib(field: str) -> int:
    with open(_STATUS) as status:
        match = re.search(rf"^{field}:\s+(\d+) kB", status.read(), re.MULTILINE)
    assert match is not None, f"no {field} in {_STATUS}"
    return int(match.group(1))


def _reset_high_water_mark() -> bool:
    try:
        with open(_CLEAR_REFS, "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:  # not Linux (>= 4.0), or not allowed here
        return False


@contextlib.contextmanager
def peak_memory() -> Iterator[PeakMemory]:
    """Measure the block: ``with peak_memory() as peak: ...``, then ``peak.growth``."""
    result = PeakMemory()
    if _reset_high_water_mark():
        start = _resident_kib("VmRSS")
        yield result
        result.growth = (_resident_kib("VmHWM") - start) * 1024
        return
    tracemalloc.start()
    try:
        yield result
        result.growth = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@contextlib.contextmanager
def address_space_limit(headroom: int) -> Iterator[None]:
    """Make an allocation that takes the process's address space more than
    ``headroom`` bytes above where it stands fail in the block (numpy and Python raise
    `MemoryError`), as one of that size would on a machine without the memory.

    A soft `RLIMIT_AS`, restored on exit. The block must start no threads (each
    reserves a stack and a malloc arena). Where there is no ``/proc`` or no
    `resource` (not Linux), the block runs unlimited.
    """
    try:
        import resource

        here = _resident_kib("VmSize") * 1024
    except (ImportError, OSError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = here + headroom
    for ceiling in (soft, hard):
        if ceiling != resource.RLIM_INFINITY:
            limit = min(limit, ceiling)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
