"""The driver: the program that calls a fusion plan's kernels, compiled through LLVM IR or Numba.

Each :class:`~.fusion.Kernel` becomes one function: a loop over its domain whose body
computes every fused value at the index where it is needed (``x[i0 + 1]``), writes the
materialized ones once into arrays the caller allocates and passes in, and returns the
fused sums. The conditions that the adjoint of a shifted slice brings (``i0 >= 1``) stay
tests inside the one loop: LLVM peels the few iterations where they change, so the loop
runs as fast as one split by hand at the edges (0.95-1.0x, measured at n = 10^4..10^6),
and there is one loop body to compile, not two:

    for i0 in range(1000000):
        t1 = 0.0
        if i0 >= 1:
            t1 = a0[i0 - 1]
        ...
        o0[i0] = t7 + t12

:func:`.kernel_ir.build` writes that loop once, as a typed list of operations (the one
place where the fusion's indexing becomes code), and one of two renderers compiles it. A
float64 kernel (float64 or boolean arrays, float64 numbers, one thread) goes to
:mod:`.llvm_kernels`, which writes LLVM IR: no Numba typing or lowering, a fifth of
Numba's setup time. Any other kernel (float32, integers, threads) is written
here as Python source (:func:`numba_source`, the loop above) and compiled by Numba as
``@njit(cache=True, error_model='numpy', fastmath={'reassoc'})``; for it the kernel is
kept lean: no array allocated inside (no runtime calls), float64 functions as
:mod:`math` calls (simpler to type than numpy's ufuncs, the same machine code), numbers
in the kernel's float32 where it computes in float32. The fusion report names the route
per kernel (``k0 = 14 ops over (1000,) -> v14 [llvm]``).

``parallel=True`` shares a kernel among the cores where that gains
(:func:`.kernel_threads.threads_share`): an LLVM kernel whose estimated one-thread time
(elements times the cost of each one's operations, :func:`.kernel_threads.seconds`) is at
least 200 µs runs in parts of its first axis, one per core, each part machine code of its
own (the route says ``llvm ×2``). Memory-bound loops gain too: a second core adds memory
bandwidth here (Rosenbrock's gradient at 10^6: 0.72x one thread). A Numba kernel (float32,
integers) is a ``prange`` where :func:`threads_pay`.

The rest of the program (library calls such as ``matmul``, scalar lines) is the numpy
code of :mod:`.codegen`. Both routes cache machine code in diffkit's cache folder
(``$DIFFKIT_CACHE``, else ``~/.cache/diffkit``): LLVM object files named by the IR's
hash, Numba's ``cache=True`` beside the kernel source. A second process loads them
instead of compiling again. Numba is optional (``pip install diffkit[jit]``, which brings
llvmlite): without it :func:`numba_or_none` says so once and the caller keeps the
unfused numpy program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import primitives as P
from ..ir.graph import Atom, Const, Eqn, Graph, Var
from .buffers import buffers, held, reused_inputs, share, views
from .codegen import Writer, compile_source
from .fusion import FusionPlan, cuts, fuse, shifted_sources
from .kernel_cache import cache_dir
from .kernel_ir import KernelTooLarge, build
from .kernel_threads import cores, split, threads_share
from .llvm_kernels import llvm_route, lower
from .matvec import pair_products
from .numba_kernels import dtype_name, load, numba_or_none, numba_source, threads_pay
from .short_products import short_products


def compile_plan(plan: FusionPlan, name: str = "f", parallel: bool = False
                 ) -> tuple[str, dict[str, Any], Callable[..., tuple]]:
    """``(driver source, kernel source, the driver)``: the kernels (through LLVM IR where
    :mod:`.llvm_kernels` maps them, else Numba) and the numpy lines around them, in one
    straight-line function; intermediate arrays go to buffers kept across calls
    (:func:`held`), matrix products into theirs (``np.matmul(a, b, out=v3)``). Each
    kernel's ``route`` says which compiled it. Needs numba (see :func:`numba_or_none`)."""
    graph = plan.graph
    w = Writer(graph)
    kept = held(plan)
    kernel_src, numba_src, calls = [], [], []
    # every kernel's IR first: one past the size limit raises before any is compiled
    built = [(step, None if isinstance(step, Eqn) else build(plan, step)) for step in plan.steps]
    for step, ir in built:
        if ir is None:
            calls.append((step, None, None))
            continue
        fn = lower(ir, cache_dir(), cores() if parallel and threads_share(ir) else 1)
        threads = fn is None and parallel and threads_pay(ir)
        src = numba_source(ir, threads)
        step.route = _route(fn, threads)
        kernel_src.append(src)
        if fn is None:
            numba_src.append(src)
        calls.append((step, ir, fn))
    module = load(numba_src) if numba_src else None
    steps = [(list(step.inputs), [step.out]) if ir is None else
             (list(ir.atoms), step.outputs + ([step.matvec.rows] if step.matvec else []))
             for step, ir, _ in calls]
    w.ns["_s"], w.ns["_buffers"] = _scalar, buffers(kept, share(kept, steps, views(plan)))
    lines = [f"def {name}({', '.join(w.names[v] for v in graph.inputs)}):"]
    if kept:
        lines.append(f"    {', '.join(w.names[v] for v in kept)}, = _buffers()")
    copies = reused_inputs(graph, calls)
    if copies:
        w.ns["_copies"] = buffers(copies, list(range(len(copies))))
        lines.append(f"    {', '.join(f'_aligned_{w.names[v]}' for v in copies)}, = _copies()")
        lines += [f"    np.copyto(_aligned_{w.names[v]}, {w.names[v]})" for v in copies]
    for step, ir, fn in calls:
        if ir is None and step.out in kept:
            args = ", ".join(w.atom(x) for x in step.inputs)
            lines.append(f"    np.matmul({args}, out={w.names[step.out]})"
                         if step.prim is P.matmul else
                         f"    np.concatenate(({args},), axis={step.params['axis']}, "
                         f"out={w.names[step.out]})")
            continue
        if ir is None:
            lines.append(f"    {w.names[step.out]} = {w.expr(step)}")
            continue
        args = [f"_s({w.atom(a)})" if len(a.shape) == 0 else
                f"_aligned_{w.atom(a)}" if fn is not None and a in copies else w.atom(a)
                for a in ir.atoms]
        if fn is None:
            fn = getattr(module, step.name)
            _warm(fn, ir.atoms, step.outputs + [e.out for e in step.partials])
        else:  # LLVM kernels read C-contiguous arrays: a constant is made one once
            for a, arg in zip(ir.atoms, args):
                if isinstance(a, Const) and len(a.shape):
                    w.ns[arg] = np.ascontiguousarray(w.ns[arg])
        w.ns[step.name] = fn
        partial = [e.out for e in step.partials]  # sums over rows start at zero
        outs = [w.names[v] for v in step.outputs + partial]
        made = step.outputs + ([step.matvec.rows] if step.matvec else [])
        lines += [f"    {w.names[v]} = np.empty({v.shape!r}, np.{dtype_name(v)})"
                  for v in made if v not in kept]
        lines += [f"    {w.names[v]} = np.zeros({v.shape!r}, np.{dtype_name(v)})" for v in partial]
        call = (f"{step.name}({', '.join(args + outs)})  # {step.ops} ops over {step.domain}"
                f" [{step.route}]")
        sums = [w.names[e.out] for e in step.reductions]
        lines.append(f"    {', '.join(sums)}, = {call}" if sums else f"    {call}")
        for e in step.reductions:  # kernels hand sums back as Python floats
            lines.append(f"    {w.names[e.out]} = np.{dtype_name(e.out)}({w.names[e.out]})")
    lines.append(f"    return ({', '.join(w.atom(a) for a in graph.outputs)},)")
    source = "\n".join(lines) + "\n"
    return source, "".join(kernel_src), compile_source(source, w.ns, name)


def kernel_routes(plan: FusionPlan, parallel: bool = False) -> FusionPlan:
    """``plan`` with each kernel's ``route`` as :func:`compile_plan` would take it, decided
    from the kernels' types without rendering or compiling them (``diffkit show --code``)."""
    for k in plan.kernels:
        ir = build(plan, k)
        parts = split(ir, cores()) if parallel and threads_share(ir) else []
        k.route = (f"llvm ×{len(parts)}" if parts else "llvm") if llvm_route(ir) else \
            "numba prange" if parallel and threads_pay(ir) else "numba"
    return plan


def _route(fn: Any, threads: bool) -> str:
    """How a kernel was compiled, as the fusion report says it: ``llvm`` (``llvm ×2``: its
    first axis shared by two threads), ``numba`` or ``numba prange``."""
    if fn is None:
        return "numba prange" if threads else "numba"
    return f"llvm ×{fn.parts}" if fn.parts > 1 else "llvm"


def _scalar(v: Any) -> Any:
    return np.asarray(v)[()]


def _warm(fn: Any, atoms: list[Atom], outputs: list[Var]) -> None:
    """Compile ``fn`` now for C-contiguous arrays of these types, then the arrays it
    writes (setup, not first call)."""
    import numba

    types = []
    for a in atoms:
        if len(a.shape) == 0:
            types.append(numba.from_dtype(a.dtype))
        elif isinstance(a, Const):
            types.append(numba.typeof(np.asarray(a.value)))
        else:
            types.append(numba.types.Array(numba.from_dtype(a.dtype), len(a.shape), "C"))
    types += [numba.types.Array(numba.from_dtype(v.dtype), len(v.shape), "C") for v in outputs]
    fn.compile(tuple(types))


def fusion_plan(graph: Graph, barriers: frozenset[Var] = frozenset()) -> FusionPlan:
    """The kernels and library calls of ``graph``: its products of a short side written
    out (:mod:`.short_products`), :func:`.fusion.fuse` (again with :func:`.fusion.cuts`
    where a kernel is too large to compile quickly), then the matrix-vector pairs of
    :mod:`.matvec` taken into their kernels."""
    graph, operands = short_products(graph)
    plan = fuse(graph, barriers | operands)
    for _ in range(3):  # kernels past KERNEL_OPS cut (a cut may leave a later part large)
        more = cuts(plan) - barriers
        if not more:
            break
        barriers |= more
        plan = fuse(graph, barriers | operands)
    return pair_products(plan)


def fused_program(graph: Graph, name: str = "f", parallel: bool = False
                  ) -> tuple[FusionPlan, tuple[str, str, Callable[..., tuple]] | None]:
    """The fusion plan of ``graph`` and, when numba is there and something fuses, the
    compiled ``(driver source, kernel source, driver)``; else None (keep numpy code)."""
    plan = fusion_plan(graph)
    if not plan.kernels or numba_or_none() is None:
        return plan, None
    try:
        return plan, compile_plan(plan, name, parallel)
    except (KernelTooLarge, RecursionError):  # values recomputed at shifted indices,
        plan = fusion_plan(graph, shifted_sources(plan))  # step after step: write them
        return plan, compile_plan(plan, name, parallel)
