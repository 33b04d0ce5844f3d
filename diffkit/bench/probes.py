"""The one place diffkit measures time and memory: a timer, a tracemalloc probe and a
resident-size probe, shared by the harness, the reports, the race and ``benchmarks/``.

* :func:`first_call` — one call's result and its seconds: the first call of a compiled,
  traced or derived function, its setup included;
* :func:`timed` — median seconds per call of one function (autoranged like ``timeit``:
  enough calls per sample to last ``min_time``) and the interquartile spread;
* :func:`interleaved` — the same for several functions measured in turn, one sample of
  each per round, so a change in the machine's load hits them all alike (ratios);
* :func:`peak_bytes` — the tracemalloc peak of one call (numpy reports its buffers);
* :func:`peak_rss_bytes` — growth of the resident-set high-water mark during one call:
  what tracemalloc cannot see (Numba's and C libraries' allocations). Linux lets a
  process reset its high-water mark (``echo 5 > /proc/self/clear_refs``) and read it back
  (``VmHWM``); elsewhere it returns None. Memory malloc freed but kept resident would hide
  an allocation from that mark, so it is handed back first (glibc's ``malloc_trim``);
* :func:`bandwidth_bytes_per_s` — the machine's copy bandwidth at a working-set size.

>>> seconds, spread = timed(lambda: sum(range(100)), repeat=3, min_time=0.001)
>>> seconds > 0 and spread >= 0
True
>>> import numpy as np
>>> peak_bytes(lambda: np.ones(10**5)) >= 8 * 10**5
True
"""

from __future__ import annotations

import ctypes
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

Clock = Callable[[], float]


def _calls_per_sample(fn: Callable[[], Any], min_time: float, clock: Clock) -> int:
    """Calls per sample so that one sample lasts at least ``min_time`` (after a warm-up)."""
    fn()
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        elapsed = clock() - start
        if elapsed >= min_time or number >= 10**6:
            return number
        number *= 10 if elapsed < min_time / 10 else 2


def interleaved(fns: list[Callable[[], Any]], repeat: int = 5, min_time: float = 0.02,
                clock: Clock = time.perf_counter) -> list[tuple[float, float]]:
    """``(median seconds per call, interquartile spread)`` of each function, one
    autoranged sample of each per round (``clock``: wall time, or ``time.process_time``
    for this process's CPU time)."""
    numbers = [_calls_per_sample(fn, min_time, clock) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, k, s in zip(fns, numbers, samples):
            start = clock()
            for _ in range(k):
                fn()
            s.append((clock() - start) / k)
    out = []
    for s in samples:
        q = statistics.quantiles(s, n=4) if len(s) > 1 else [s[0]] * 3
        out.append((statistics.median(s), q[2] - q[0]))
    return out


def first_call(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the seconds it took (once: a first call, its setup included).

    >>> first_call(lambda: 2 + 3)[0]
    5
    """
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def timed(fn: Callable[[], Any], repeat: int = 5, min_time: float = 0.05) -> tuple[float, float]:
    """(median seconds per call, interquartile spread), autoranged after a warm-up."""
    return interleaved([fn], repeat, min_time)[0]


def peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (tracemalloc) during one call of ``fn``."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


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
    None where the operating system cannot reset it.

    >>> peak = peak_rss_bytes(lambda: np.ones(10**6).sum())
    >>> peak is None or peak >= 0
    True
    """
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

    >>> bandwidth_bytes_per_s(1000, repeat=3) > 1e6  # (loosely: a loaded machine is slow)
    True
    """
    src = np.ones(n)
    dst = np.empty_like(src)
    seconds = timed(lambda: np.copyto(dst, src), repeat=repeat)[0]
    return 2 * src.nbytes / seconds
