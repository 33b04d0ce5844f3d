"""Which fused kernels ``parallel=True`` shares among the cores, in what parts, on which
threads.

A kernel's one-thread time is estimated from its operations (:func:`seconds`: its
arithmetic intensity, in effect); from :data:`THREADS_MIN_SECONDS` on, its first axis is
cut into one part per core (:func:`split`), each part compiled with constant bounds by
:mod:`.llvm_kernels` and run at once on :func:`workers` (``docs/compiled.md``, "Threads,
and when they pay"; ``benchmarks/threads.py`` measures the rule).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..primitives.lowering import OPS
from . import vector_math
from .formulas import CHEAP_CALLS
from .kernel_ir import KernelIR, flattened

#: a kernel's time per element on one core, estimated from its operations (fitted on the
#: 2-core host by benchmarks/threads.py): ~0.25 ns of memory traffic and vectorized
#: arithmetic, ~0.6 ns per call of diffkit's vector math (exp, log, log1p, tanh), ~5 ns per
#: call of the C library (sin, expm1 ...: one opaque call per element)
NS_PER_ELEMENT, NS_PER_VECTOR_CALL, NS_PER_LIBRARY_CALL = 0.25, 0.6, 5.0
#: parallel=True shares a kernel among the cores from this estimated one-thread time on:
#: handing a part to a thread and waiting for it costs ~50-75 µs here
THREADS_MIN_SECONDS = 200e-6


def seconds(ir: KernelIR) -> float:
    """The kernel's estimated time on one core (its arithmetic intensity, in effect):
    elements times the cost of each one's operations (:data:`NS_PER_ELEMENT` ...).

    >>> import diffkit.numpy as dnp
    >>> from diffkit.compiler.fusion import fuse
    >>> from diffkit.compiler.kernel_ir import build
    >>> from diffkit.ir.tracer import trace_graph
    >>> def estimate(f):
    ...     plan = fuse(trace_graph(f, (np.ones(10**6),)))
    ...     return round(seconds(build(plan, plan.kernels[0])) * 1e6)
    >>> estimate(lambda x: x * 2.0), estimate(dnp.tanh), estimate(dnp.sin)   # µs
    (250, 850, 5250)
    """
    ns = NS_PER_ELEMENT
    for i in ir.instructions():
        if i.op in OPS and OPS[i.op].kind == "call":
            ns += NS_PER_VECTOR_CALL if OPS[i.op].c in vector_math.CALLS else \
                0.0 if OPS[i.op].c in CHEAP_CALLS else NS_PER_LIBRARY_CALL
    return int(np.prod(ir.domain)) * ns * 1e-9


def threads_share(ir: KernelIR) -> bool:
    """Whether ``parallel=True`` shares this kernel among threads: one that takes long
    enough on one core (:func:`seconds` ≥ :data:`THREADS_MIN_SECONDS`), compute- or
    memory-bound alike (a second core adds memory bandwidth here: Rosenbrock's gradient
    at 10^6 runs in 0.7-0.8x the time), whose parts write apart (not a sum over rows into
    one row, nor a matrix-vector pair)."""
    return seconds(ir) >= THREADS_MIN_SECONDS and ir.matvec is None and \
        not any(i.op == "add_at" for i in ir.instructions())


def cores() -> int:
    """The cores this process may run on (its affinity, e.g. one when pinned)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


_workers: dict[int, ThreadPoolExecutor] = {}  # how many threads -> the pool


def workers(n: int) -> ThreadPoolExecutor:
    """The process's kernel threads (``n`` of them), started on first use. A forked
    process (a harness cell) starts its own: the parent's threads are not in it."""
    if n not in _workers:
        _workers[n] = ThreadPoolExecutor(n, thread_name_prefix="diffkit-kernel")
    return _workers[n]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_workers.clear)


def shares(rows: int, threads: int, align: int = 8) -> list[tuple[int, int]]:
    """The first axis's ``rows`` cut into ``threads`` contiguous parts of nearly equal
    size, each boundary a multiple of ``align`` (whole cache lines per thread).

    >>> shares(1000, 2), shares(1001, 3)
    ([(0, 504), (504, 1000)], [(0, 336), (336, 672), (672, 1001)])
    """
    cuts = [min(rows, -(-(rows * k // threads) // align) * align) for k in range(threads + 1)]
    return [(lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def split(ir: KernelIR, threads: int) -> list[tuple[int, int]]:
    """The parts of the (flattened) kernel's first axis for ``threads``: none for one."""
    parts = shares(flattened(ir).domain[0], threads) if threads > 1 else []
    return parts if len(parts) > 1 else []
