"""Buffer planning: the arrays a compiled program keeps across calls, and which of them
share memory.

Intermediate arrays that only kernels, copying calls and views read are allocated once,
aligned to a cache line (:func:`aligned`), and reused by every call (:func:`held`);
values whose lives do not overlap share one buffer (:func:`share`); a small input a kernel
reads again and again is copied once per call into an aligned buffer
(:func:`reused_inputs`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import CONTRACTION, VIEW
from ..ir.graph import Const, Eqn, Graph, Var
from .fusion import FusionPlan
from .kernel_ir import KernelIR

def _matrix_product(e: Eqn) -> bool:
    """``e`` is a float product of two matrices (generated code writes ``a @ b``)."""
    library = e.prim.library
    return e.prim.kind == CONTRACTION and library is not None and e.out.dtype.kind == "f" and \
        all(isinstance(a, (Var, Const)) for a in e.inputs) and library.when is not None and \
        library.when(*(a.shape for a in e.inputs))


def _copying(e: Eqn) -> bool:
    """``e`` is a library call that writes a new array from its operands (a float
    matrix product, a concatenation): it can write into a kept buffer (``out=``) and
    never returns a view of an operand."""
    return _matrix_product(e) or (e.prim is P.concatenate and e.out.dtype.kind == "f"
                                  and all(isinstance(a, Var) for a in e.inputs))


#: library calls that may hand back a view of their first operand: a kept buffer may be
#: read through one while the view, in turn, is read only by kernels, copying calls and
#: such views (the buffer then lives as long as its views are read)


def views(plan: FusionPlan) -> dict[Var, Var]:
    """Each value a viewing library call makes -> the value it may be a view of, followed
    back to one that is not a view (``x.T.reshape(...)`` -> ``x``)."""
    made = {e.out: e.inputs[0] for e in plan.library
            if e.prim.kind == VIEW and isinstance(e.inputs[0], Var)}
    for v in list(made):
        while made[v] in made:
            made[v] = made[made[v]]
    return made


def held(plan: FusionPlan) -> list[Var]:
    """The arrays the driver writes into buffers it keeps from call to call (allocated
    once per program and thread, shared where their lifetimes do not meet, see
    :func:`share`): those a kernel or a copying library call (:func:`_copying`) writes
    that only kernels, copying calls and views of them (primitives of kind ``view``) read. Never an
    output, nor a view of it: an array handed to the caller is never written again.

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.compiler.fusion import fuse
    >>> from diffkit.ir.tracer import trace_graph
    >>> g = trace_graph(lambda X, W: dnp.tanh(X @ W + 1.0) @ W.T, (np.ones((4, 3)), np.ones((3, 2))))
    >>> [str(v.shape) for v in held(fuse(g))]
    ['(4, 2)', '(4, 2)']
    """
    graph, root = plan.graph, views(plan)
    made = {v for k in plan.kernels for v in k.outputs}
    made |= {e.out for e in plan.library if _copying(e)}
    made |= {k.matvec.rows for k in plan.kernels if k.matvec is not None}
    blocked = {root.get(a, a) for a in graph.outputs if isinstance(a, Var)}
    blocked |= {root.get(a, a) for e in plan.library
                if not _copying(e) and e.prim.kind != VIEW
                for a in e.inputs if isinstance(a, Var)}
    kept = made - blocked
    return [e.out for e in graph.eqns if e.out in kept]


ALIGN = 64  # bytes: a cache line, and one AVX-512 vector of doubles


def aligned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An empty array whose data starts on a cache line: a vectorized loop's loads then
    never straddle two lines (numpy's allocator promises 16 bytes; where an array lands
    otherwise changed a kernel's time from one process to the next).

    >>> aligned((3, 5), np.dtype(np.float64)).ctypes.data % ALIGN
    0
    """
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


REUSED_BYTES = 1 << 16  # inputs up to this size that a kernel reads again and again


def reused_inputs(graph: Graph, steps: list[tuple[Any, KernelIR | None, Any]]) -> list[Var]:
    """The small float64 inputs an LLVM kernel reads many times over (a layer's weights
    or bias, read at every row): the driver copies them into kept, aligned buffers first.
    A vector load from numpy's memory (16-byte aligned) straddles two cache lines; in the
    MLP step, the weights' loads so placed cost 8 % of the program's time."""
    found: dict[Var, None] = {}
    for _, ir, fn in steps:
        if ir is None or fn is None:
            continue
        for a in ir.atoms:
            if isinstance(a, Var) and a in graph.inputs and a.shape and \
                    a.dtype == np.float64 and 8 * np.prod(a.shape) <= REUSED_BYTES and \
                    4 * np.prod(a.shape) <= np.prod(ir.domain):
                found[a] = None
    return list(found)


def buffers(values: list[Var], slots: list[int]) -> Callable[[], tuple[np.ndarray, ...]]:
    """A function giving this thread's buffers for ``values`` (made at its first call);
    values with the same slot share one array."""
    local = threading.local()
    specs = {k: (tuple(v.shape), v.dtype) for v, k in zip(values, slots)}

    def buffers() -> tuple[np.ndarray, ...]:
        try:
            return local.arrays
        except AttributeError:
            made = {k: aligned(shape, dtype) for k, (shape, dtype) in specs.items()}
            local.arrays = tuple(made[k] for k in slots)
            return local.arrays
    return buffers


def share(values: list[Var], steps: list[tuple[list[Any], list[Var]]],
          root: dict[Var, Var] | None = None) -> list[int]:
    """A buffer slot per value: values of one shape and dtype share a slot when one is
    last read (itself or through a view: ``root`` maps a view to its array) at a step
    before the other is written (never within one step: a kernel never writes over what
    it reads). ``steps`` are (read, written) in program order. A stencil's hundred steps
    then cycle through a few arrays that stay in the cache.

    >>> from diffkit.ir.graph import Var
    >>> a, b, c = (Var(n, (4,), np.dtype(np.float64)) for n in (1, 2, 3))
    >>> share([a, b, c], [([], [a]), ([a], [b]), ([b], [c]), ([c], [])])
    [0, 1, 0]
    """
    wanted = set(values)
    first, last = {}, {}
    for i, (read, written) in enumerate(steps):
        for v in written:
            if v in wanted:
                first.setdefault(v, i)
        for v in read:
            v = (root or {}).get(v, v)
            if v in wanted:
                last[v] = i
    free: dict[tuple, list[int]] = {}
    slot: dict[Var, int] = {}
    # (ties by program order: a rewritten graph's new values may share a number)
    ends = sorted((last.get(v, first.get(v, 0)), k, v) for k, v in enumerate(values))
    count = 0
    for v in sorted(values, key=lambda v: first.get(v, 0)):
        while ends and ends[0][0] < first.get(v, 0):
            _, _, done = ends.pop(0)
            if done in slot:
                free.setdefault((done.shape, done.dtype), []).append(slot[done])
        spare = free.get((v.shape, v.dtype))
        if spare:
            slot[v] = spare.pop()
        else:
            slot[v], count = count, count + 1
    return [slot[v] for v in values]
