"""Peak resident memory of one call, and the machine's memory bandwidth.

tracemalloc sees numpy's allocations but not Numba's (or any C library's), so a fused
kernel's memory is measured as resident size instead: Linux lets a process reset its
high-water mark (``echo 5 > /proc/self/clear_refs``) and read it back (``VmHWM`` in
``/proc/self/status``). Elsewhere :func:`peak_rss_bytes` returns None. Memory that malloc
freed but kept resident would hide an allocation from that mark, so it is handed back to
the system first (glibc's ``malloc_trim``).

>>> import numpy as np
>>> peak = peak_rss_bytes(lambda: np.ones(10**6).sum())
>>> peak is None or peak >= 0
True
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from .measure import timed


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{field} not in /proc/self/status")


def _trim_heap() -> None:
    """Return malloc's free memory to the system (glibc), so a later allocation faults in
    fresh pages that the high-water mark sees."""
    try:
        ctypes.CDLL(None).malloc_trim(0)  # the process's own symbols, the C library's among them
    except (OSError, AttributeError):  # not glibc
        pass


def peak_rss_bytes(fn: Callable[[], Any]) -> int | None:
    """Growth of the resident-set high-water mark during one call of ``fn`` (bytes), or
    None where the operating system cannot reset it."""
    _trim_heap()
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        before = _status("VmRSS")
    except OSError:
        return None
    result = fn()
    peak = _status("VmHWM")
    del result
    return max(0, peak - before)


def bandwidth_bytes_per_s(n: int = 2**23, repeat: int = 5) -> float:
    """Measured bandwidth at a working set of ``n`` float64s: bytes read and written per
    second copying them into another array (median of ``repeat``). A small ``n`` stays in
    cache, so this is the floor of a kernel that streams ``n`` values at that size, not
    only main memory's.

    >>> bandwidth_bytes_per_s(1000, repeat=3) > 1e8
    True
    """
    src = np.ones(n)
    dst = np.empty_like(src)
    seconds = timed(lambda: np.copyto(dst, src), repeat=repeat)[0]
    return 2 * src.nbytes / seconds
