"""Fused kernels as loops compiled through LLVM IR or Numba, and the program calling them.

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

``parallel=True`` splits a kernel's outer loop over threads (a Numba ``prange``) only
where that gains (:func:`threads_pay`): a large loop with enough C library calls (``exp``,
``sin`` ...) per element for the work to be compute, not memory traffic. A memory-bound
loop such as Rosenbrock's gradient stays the one-thread LLVM kernel: through Numba's
threads it gained nothing when measured (their start costs, and the Numba kernel is not
the vectorized LLVM one), although a second core adds some memory bandwidth here.

The rest of the program (library calls such as ``matmul``, scalar lines) is the numpy
code of :mod:`.codegen`. Both routes cache machine code in diffkit's cache folder
(``$DIFFKIT_CACHE``, else ``~/.cache/diffkit``): LLVM object files named by the IR's
hash, Numba's ``cache=True`` beside the kernel source. A second process loads them
instead of compiling again. Numba is optional (``pip install diffkit[jit]``, which brings
llvmlite): without it :func:`numba_or_none` says so once and the caller keeps the
unfused numpy program.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import primitives as P
from ..core import CONTRACTION, VIEW
from ..primitives.lowering import OPS, ScalarExpr
from . import formulas, vector_math
from .codegen import _Writer, compile_source
from .fusion import FusionPlan, fuse, shifted_sources
from ..ir.graph import Atom, Const, Eqn, Graph, Var
from .kernel_ir import Instr, KernelIR, KernelTooLarge, Operand, build, index_text
from .llvm_kernels import llvm_route, lower
from .matvec import pair_products
from .short_products import short_products

MISSING = ("numba is not installed, so fuse=True runs the unfused numpy program (plain "
           "floats for a scalar one); for fused kernels and the scalar tape VM: "
           "pip install diffkit[jit]")
_said_missing = False
_modules: dict[str, Any] = {}  # source hash -> imported kernel module (this process)


def numba_or_none() -> Any:
    """The numba module, or None after saying once (a warning) what is missing."""
    global _said_missing
    try:
        import numba
    except ImportError:
        if not _said_missing:
            _said_missing = True
            warnings.warn(MISSING, RuntimeWarning, stacklevel=3)
        return None
    return numba


#: parallel=True threads a kernel over at least this many elements ...
PARALLEL_MIN_SIZE = 100_000
#: ... with at least one C library call (~10-20 ns each) per this many array elements it
#: reads or writes (~1 ns each at one core's memory bandwidth)
ACCESSES_PER_CALL = 4
#: functions of a few cycles, which do not make a loop compute-bound; exp, log, log1p and
#: tanh vectorize on the one-thread LLVM route (vector_math.py: ~1-2 ns each), faster than
#: the C library's scalar calls a threaded (Numba) kernel makes on two cores
CHEAP_CALLS = {"fabs", "floor", "ceil", "rint", "copysign", "sqrt", *vector_math.CALLS}


def threads_pay(ir: KernelIR) -> bool:
    """Whether splitting the kernel's outer loop over threads gains: enough elements, and
    enough transcendental work per memory access (see :data:`ACCESSES_PER_CALL`).

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.compiler.fusion import fuse
    >>> from diffkit.ir.tracer import trace_graph
    >>> def ir(f, n):
    ...     plan = fuse(trace_graph(f, (np.ones(n),)))
    ...     return build(plan, plan.kernels[0])
    >>> threads_pay(ir(lambda x: dnp.sin(dnp.exp(x)) * x, 10**6))
    True
    >>> threads_pay(ir(lambda x: x[1:] * x[:-1] + 1.0, 10**6)), threads_pay(ir(dnp.sin, 10))
    (False, False)
    """
    instrs = ir.instructions()
    calls = sum(1 for i in instrs if i.op in OPS and OPS[i.op].kind == "call"
                and i.op not in CHEAP_CALLS)
    accesses = sum(1 for i in instrs if i.op in ("load", "store"))
    if ir.matvec is not None or any(i.op == "add_at" for i in instrs):
        return False  # one thread: rows added to one output (threads would race)
    return int(np.prod(ir.domain)) >= PARALLEL_MIN_SIZE and calls > 0 and \
        calls * ACCESSES_PER_CALL >= accesses


def numba_source(ir: KernelIR, parallel: bool = False) -> str:
    """The kernel as Python source for ``numba.njit``: inputs, then the arrays to write
    (``o0, o1 ...``); it returns the fused sums, if any. The outer loop is a ``prange``
    when ``parallel``."""
    lines = [f"def {ir.name}({', '.join(p.name for p in ir.params)}):"]
    lines += [f"    s{k} = 0.0" for k in range(ir.sums)]
    if ir.matvec:  # rows = X @ w first (see .matvec; Numba's route takes two passes)
        X, w, rows, _, _ = ir.matvec
        lines += [f"    w_flat = {w}.reshape(-1)", f"    for r in range({rows}.shape[0]):",
                  "        acc = 0.0", f"        for j in range({X}.shape[1]):",
                  f"            acc += {X}[r, j] * w_flat[j]", f"        {rows}[r] = acc"]
    for axis, n in enumerate(ir.domain):
        loop = "prange" if parallel and axis == 0 else "range"
        lines.append("    " * (axis + 1) + f"for i{axis} in {loop}({n}):")
    full = ", ".join(f"i{a}" for a in range(len(ir.domain)))
    lines += _statements(ir.body, len(ir.domain) + 1, full)
    if ir.matvec:
        X, _, _, grad, out = ir.matvec
        lines += [f"    out_flat = {out}.reshape(-1)", "    out_flat[:] = 0.0",
                  f"    for r in range({grad}.shape[0]):", f"        for j in range({X}.shape[1]):",
                  f"            out_flat[j] += {grad}[r] * {X}[r, j]"]
    if ir.sums:
        lines.append(f"    return ({', '.join(f's{k}' for k in range(ir.sums))},)")
    return "\n".join(lines) + "\n"


def _statements(body: list[Instr] | tuple[Instr, ...], depth: int, full: str) -> list[str]:
    pad, lines = "    " * depth, []
    for i in body:
        if i.op == "if":
            tests, inner = i.args
            lines.append(pad + "if " + " and ".join(f"i{a} {c} {n}" for a, c, n in tests) + ":")
            lines += _statements(inner, depth + 1, full)
        elif i.op == "load":
            lines.append(f"{pad}{i.result} = {i.args[0]}[{', '.join(map(index_text, i.args[1]))}]")
        elif i.op == "store":
            lines.append(f"{pad}{i.args[0]}[{full}] = {_operand(i.args[1], i.dtype)}")
        elif i.op == "add_to":
            lines.append(f"{pad}s{i.args[0]} += {_operand(i.args[1], i.dtype)}")
        elif i.op == "add_at":
            out, value, index, _ = i.args
            lines.append(f"{pad}{out}[{', '.join(map(index_text, index))}] += "
                         f"{_operand(value, i.dtype)}")
        elif i.op == "set":
            lines.append(f"{pad}{i.result} = {_operand(i.args[0], i.dtype)}")
        else:
            typed = i.dtype if OPS[i.op].kind != "compare" else None
            expr = ScalarExpr(i.op, tuple(map(ScalarExpr.arg, range(len(i.args)))))
            lines.append(f"{pad}{i.result} = " + formulas.python(
                expr, [_operand(a, typed) for a in i.args], i.dtype == np.float64))
    return lines


def _operand(a: Operand, dtype: np.dtype | None) -> str:
    """A result's name, or a number (in float32 where the operation computes in float32,
    so that numpy's weak Python scalars are matched)."""
    if isinstance(a, str):
        return a
    text = formulas.literal(a)
    return f"np.float32({text})" if dtype == np.float32 and not isinstance(a, bool) else text


def _dtype(v: Var) -> str:
    return "bool_" if v.dtype.kind == "b" else v.dtype.name


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
    return [e.out for e in graph.eqns if e.out in made - blocked]


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


def _buffers(values: list[Var], slots: list[int]) -> Callable[[], tuple[np.ndarray, ...]]:
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
    ends = sorted((last.get(v, first.get(v, 0)), v.n, v) for v in values)
    count = 0
    for v in sorted(values, key=lambda v: (first.get(v, 0), v.n)):
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


def compile_plan(plan: FusionPlan, name: str = "f", parallel: bool = False
                 ) -> tuple[str, dict[str, Any], Callable[..., tuple]]:
    """``(driver source, kernel source, the driver)``: the kernels (through LLVM IR where
    :mod:`.llvm_kernels` maps them, else Numba) and the numpy lines around them, in one
    straight-line function; intermediate arrays go to buffers kept across calls
    (:func:`held`), matrix products into theirs (``np.matmul(a, b, out=v3)``). Each
    kernel's ``route`` says which compiled it. Needs numba (see :func:`numba_or_none`)."""
    graph = plan.graph
    w = _Writer(graph)
    kept = held(plan)
    kernel_src, numba_src, calls = [], [], []
    for step in plan.steps:
        if isinstance(step, Eqn):
            calls.append((step, None, None))
            continue
        ir = build(plan, step)
        threads = parallel and threads_pay(ir)
        src = numba_source(ir, threads)
        fn = None if threads else lower(ir, cache_dir())
        step.route = "llvm" if fn is not None else "numba prange" if threads else "numba"
        kernel_src.append(src)
        if fn is None:
            numba_src.append((src, threads))
        calls.append((step, ir, fn))
    module = _load(numba_src) if numba_src else None
    steps = [(list(step.inputs), [step.out]) if ir is None else
             (list(ir.atoms), step.outputs + ([step.matvec.rows] if step.matvec else []))
             for step, ir, _ in calls]
    w.ns["_s"], w.ns["_buffers"] = _scalar, _buffers(kept, share(kept, steps, views(plan)))
    lines = [f"def {name}({', '.join(w.names[v] for v in graph.inputs)}):"]
    if kept:
        lines.append(f"    {', '.join(w.names[v] for v in kept)}, = _buffers()")
    copies = reused_inputs(graph, calls)
    if copies:
        w.ns["_copies"] = _buffers(copies, list(range(len(copies))))
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
        lines += [f"    {w.names[v]} = np.empty({v.shape!r}, np.{_dtype(v)})"
                  for v in made if v not in kept]
        lines += [f"    {w.names[v]} = np.zeros({v.shape!r}, np.{_dtype(v)})" for v in partial]
        call = (f"{step.name}({', '.join(args + outs)})  # {step.ops} ops over {step.domain}"
                f" [{step.route}]")
        sums = [w.names[e.out] for e in step.reductions]
        lines.append(f"    {', '.join(sums)}, = {call}" if sums else f"    {call}")
        for e in step.reductions:  # kernels hand sums back as Python floats
            lines.append(f"    {w.names[e.out]} = np.{_dtype(e.out)}({w.names[e.out]})")
    lines.append(f"    return ({', '.join(w.atom(a) for a in graph.outputs)},)")
    source = "\n".join(lines) + "\n"
    return source, "".join(kernel_src), compile_source(source, w.ns, name)


def kernel_routes(plan: FusionPlan, parallel: bool = False) -> FusionPlan:
    """``plan`` with each kernel's ``route`` as :func:`compile_plan` would take it, decided
    from the kernels' types without rendering or compiling them (``diffkit show --code``)."""
    for k in plan.kernels:
        ir = build(plan, k)
        k.route = ("numba prange" if parallel and threads_pay(ir) else
                   "llvm" if llvm_route(ir) else "numba")
    return plan


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


def cache_dir() -> Path:
    """Where kernel sources, Numba's machine code beside them and LLVM object files are kept."""
    base = os.environ.get("DIFFKIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "diffkit")
    path = Path(base) / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        path = Path(tempfile.gettempdir()) / "diffkit-kernels"
        path.mkdir(parents=True, exist_ok=True)
        return path


def _load(kernels: list[tuple[str, bool]]) -> Any:
    """Import the kernels' module (written once per source, keyed by its hash); a kernel
    whose outer loop is a ``prange`` compiled with ``parallel=True``."""
    deco = "@njit(cache=True, error_model='numpy', fastmath={{'reassoc'}}{})\n"
    return import_source("import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n\n"
                         + "\n\n".join(deco.format(", parallel=True" if threads else "") + k
                                         for k, threads in kernels))


def import_source(text: str) -> Any:
    """Import generated module source from a file in :func:`cache_dir` named by its hash
    (so Numba's ``cache=True`` keeps machine code beside it), once per process."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    if digest in _modules:
        return _modules[digest]
    path = cache_dir() / f"k_{digest}.py"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"diffkit_kernels_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    _modules[digest] = module
    return module


def fusion_plan(graph: Graph, barriers: frozenset[Var] = frozenset()) -> FusionPlan:
    """The kernels and library calls of ``graph``: its products of a short side written
    out (:mod:`.short_products`), :func:`.fusion.fuse`, then the matrix-vector pairs of
    :mod:`.matvec` taken into their kernels."""
    graph, operands = short_products(graph)
    return pair_products(fuse(graph, barriers | operands))


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
