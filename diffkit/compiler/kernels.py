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

:class:`KernelWriter` writes that loop as Python source, the one place where the fusion's
indexing becomes code. A float64 kernel (float64 or boolean arrays, float64 numbers, not
``parallel``) is then read by :mod:`.llvm_kernels` and lowered straight to LLVM IR: no
Numba typing or lowering, a fifth of Numba's setup time. Any other kernel (float32,
integers, a function that module does not map, ``parallel=True``) is compiled by Numba
as ``@njit(cache=True, error_model='numpy', fastmath={'reassoc'})``; for it the kernel is
kept lean: no array allocated inside (no runtime calls), float64 functions as
:mod:`math` calls (simpler to type than numpy's ufuncs, the same machine code). The
fusion report names the route per kernel (``k0 = 14 ops over (1000,) -> v14 [llvm]``).

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
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import formulas
from .codegen import _Writer, compile_source
from .fusion import VIEWS, FusionPlan, Kernel, basic_index, fuse, operand_index, root_shape
from .ir import Atom, Const, Eqn, Graph, Var
from .llvm_kernels import lower, lowerable

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


Index = tuple  # per axis: ("i", axis, offset) = loop variable + offset, or ("c", k)


def _shift(ix: tuple, by: int) -> tuple:
    return ("i", ix[1], ix[2] + by) if ix[0] == "i" else ("c", ix[1] + by)


def _text(ix: tuple) -> str:
    if ix[0] == "c":
        return str(ix[1])
    off = ix[2]
    return f"i{ix[1]}" + (f" + {off}" if off > 0 else f" - {-off}" if off < 0 else "")


class KernelWriter:
    """Writes one kernel's function: arguments, loops, and the body at each index."""

    def __init__(self, plan: FusionPlan, kernel: Kernel, names: dict[Var, str]) -> None:
        self.plan, self.kernel, self.names = plan, kernel, names
        self.args: dict[Any, str] = {}   # Var or id(Const) -> parameter name
        self.arg_atoms: list[Atom] = []
        self.lines: list[str] = []
        self.scopes: list[dict] = []
        self.ranges: list[tuple[int, int]] = []
        self.tmp = 0
        self.depth = 1                   # indentation of the line being written

    # ---------------------------------------------------------------- operands
    def arg(self, a: Var | Const) -> str:
        key = a if isinstance(a, Var) else id(a)
        if key not in self.args:
            self.args[key] = f"a{len(self.args)}"
            self.arg_atoms.append(a)
        return self.args[key]

    def recomputed(self, v: Var) -> bool:
        e = self.plan.fusible.get(v)
        return e is not None and e.prim.name != "sum" and \
            self.plan.materialized.get(v, self.kernel.stage) >= self.kernel.stage

    def emit(self, expr: str, key: Any = None) -> str:
        self.tmp += 1
        name = f"t{self.tmp}"
        self.lines.append("    " * self.depth + f"{name} = {expr}")
        if key is not None:
            self.scopes[-1][key] = name
        return name

    def known(self, key: Any) -> str | None:
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    def value(self, a: Atom, idx: Index) -> str:
        """Source for the element of ``a`` at ``idx`` (a name or a literal)."""
        if isinstance(a, Const) and np.ndim(a.value) == 0:
            return formulas.literal(formulas.constant(a))
        if not isinstance(a, (Var, Const)):
            return formulas.literal(formulas.constant(a))
        if isinstance(a, Var) and self.recomputed(a):
            e = self.plan.fusible[a]
            if e.prim.name in VIEWS:  # a view or a slice's adjoint: no new value
                return self.compute(e, idx)
            key = (a, idx)
            name = self.known(key)
            if name is None:
                name = self.emit(self.compute(self.plan.fusible[a], idx), key)
            return name
        if len(a.shape) == 0:
            return self.arg(a)
        key = ("read", a if isinstance(a, Var) else id(a), idx)
        name = self.known(key)
        if name is None:
            name = self.emit(f"{self.arg(a)}[{', '.join(_text(i) for i in idx)}]", key)
        return name

    # ---------------------------------------------------------------- equations
    def compute(self, e: Eqn, idx: Index) -> str:
        name = e.prim.name
        f = formulas.of(e)
        if f is not None:
            args = [self.value(a, operand_index(e, k, idx)) for k, a in enumerate(e.inputs)]
            return formulas.python(f, args, _all_f64(e))
        if name == "broadcast_to":
            return self.value(e.inputs[0], operand_index(e, 0, idx))
        x = e.inputs[0]
        if name == "getitem":
            spec, out_axis, x_idx = basic_index(e.params["idx"], x.shape), 0, []
            for s in spec:
                if s[0] == "new":
                    out_axis += 1
                elif s[0] == "int":
                    x_idx.append(("c", s[1]))
                else:
                    x_idx.append(_shift(idx[out_axis], s[1]))
                    out_axis += 1
            return self.value(x, tuple(x_idx))
        return self.scatter(e, idx)

    def scatter(self, e: Eqn, idx: Index) -> str:
        """``scatter_add(u, idx)`` at ``idx``: ``u`` at the shifted index where the slice
        covers it, else 0 (the gather form of a slice's adjoint)."""
        spec = basic_index(e.params["idx"], e.params["shape"])
        conds, u_idx, out_axis = [], [], 0
        for s in spec:
            if s[0] == "new":
                u_idx.append(("c", 0))
                continue
            ix = idx[out_axis]
            out_axis += 1
            if s[0] == "int":
                conds += [self.cond(ix, ">=", s[1]), self.cond(ix, "<", s[1] + 1)]
            else:
                conds += [self.cond(ix, ">=", s[1]), self.cond(ix, "<", s[2])]
                u_idx.append(_shift(ix, -s[1]))
        if False in conds:
            return "0.0"
        test = [c for c in conds if c is not True]
        if not test:
            return self.value(e.inputs[0], tuple(u_idx))
        out = self.emit("0.0")
        self.block(" and ".join(test), lambda: self.lines.append(
            "    " * self.depth + f"{out} = {self.value(e.inputs[0], tuple(u_idx))}"))
        return out

    def cond(self, ix: tuple, op: str, bound: int) -> bool | str:
        """``ix op bound`` decided from the loop's range, else its source (and a cut)."""
        if ix[0] == "c":
            return ix[1] >= bound if op == ">=" else ix[1] < bound
        axis, off = ix[1], ix[2]
        lo, hi = self.ranges[axis]
        at = bound - off
        if op == ">=":
            if lo >= at:
                return True
            if hi - 1 < at:
                return False
        else:
            if hi - 1 < at:
                return True
            if lo >= at:
                return False
        return f"i{axis} {op} {at}"

    def block(self, test: str, body: Callable[[], None]) -> None:
        self.lines.append("    " * self.depth + f"if {test}:")
        self.scopes.append({})
        self.depth += 1
        body()
        self.depth -= 1
        self.scopes.pop()

    # ---------------------------------------------------------------- the function
    def loops(self, loop: str) -> None:
        """The loop nest over the domain (``loop`` is ``range`` or ``prange`` for the
        outer axis) and its body."""
        dom = self.kernel.domain
        self.ranges = []
        for axis, n in enumerate(dom):
            self.lines.append("    " * (axis + 1) +
                              f"for i{axis} in {loop if axis == 0 else 'range'}({n}):")
            self.ranges.append((0, n))
        self.scopes = [{}]
        self.depth = len(dom) + 1
        full = tuple(("i", a, 0) for a in range(len(dom)))
        roots = [(v.shape, v, None) for v in self.kernel.outputs] + \
                [(root_shape(e), None, e) for e in self.kernel.reductions]
        roots.sort(key=lambda r: r[0] != dom)  # unguarded roots first: theirs are shared
        for shape, v, e in roots:
            guard = [self.cond(("i", a, 0), "<", n) for a, n in enumerate(shape)]
            if False in guard:
                continue
            test = [g for g in guard if g is not True]

            def body(v: Var | None = v, e: Eqn | None = e) -> None:
                pad = "    " * self.depth
                if v is not None:
                    self.lines.append(pad + f"o{self.kernel.outputs.index(v)}"
                                      f"[{', '.join(f'i{a}' for a in range(len(dom)))}] = "
                                      f"{self.value(v, full)}")
                else:
                    self.lines.append(pad + f"s{self.kernel.reductions.index(e)} += "
                                      f"{self.value(e.inputs[0], full)}")
            if test:
                self.block(" and ".join(test), body)
            else:
                body()
        self.ranges = []

    def source(self, parallel: bool = False) -> str:
        """The kernel as Python source for ``numba.njit``: inputs, then the arrays to
        write (``o0, o1 ...``); it returns the fused sums, if any."""
        self.loops("prange" if parallel else "range")
        outs = [f"o{k}" for k in range(len(self.kernel.outputs))]
        sums = [f"s{k}" for k in range(len(self.kernel.reductions))]
        head = [f"def {self.kernel.name}({', '.join([*self.args.values(), *outs])}):"]
        head += [f"    {s} = 0.0" for s in sums]
        tail = [f"    return ({', '.join(sums)},)"] if sums else []
        return "\n".join(head + self.lines + tail) + "\n"


def _all_f64(e: Eqn) -> bool:
    """``e`` is on float64 numbers only (where :mod:`math` gives numpy's answer)."""
    f64 = np.dtype(np.float64)
    return e.out.dtype == f64 and all(not isinstance(a, (Var, Const)) or a.dtype == f64
                                      for a in e.inputs)


def _dtype(v: Var) -> str:
    return "bool_" if v.dtype.kind == "b" else v.dtype.name


def compile_plan(plan: FusionPlan, name: str = "f", parallel: bool = False
                 ) -> tuple[str, dict[str, Any], Callable[..., tuple]]:
    """``(driver source, kernel source, the driver)``: the kernels (through LLVM IR where
    :mod:`.llvm_kernels` maps them, else Numba) and the numpy lines around them. Each
    kernel's ``route`` says which compiled it. Needs numba (see :func:`numba_or_none`)."""
    graph = plan.graph
    w = _Writer(graph)
    kernel_src, numba_src, calls = [], [], []
    for step in plan.steps:
        if isinstance(step, Eqn):
            calls.append((step, None, None))
            continue
        kw = KernelWriter(plan, step, w.names)
        src = kw.source(parallel)
        fn = None if parallel else lower(src, *_operands(kw), cache_dir())
        step.route = "numba" if fn is None else "llvm"
        kernel_src.append(src)
        if fn is None:
            numba_src.append(src)
        calls.append((step, kw, fn))
    module = _load(numba_src, parallel) if numba_src else None
    w.ns["_s"] = _scalar
    lines = [f"def {name}({', '.join(w.names[v] for v in graph.inputs)}):"]
    for step, kw, fn in calls:
        if kw is None:
            lines.append(f"    {w.names[step.out]} = {w.expr(step)}")
            continue
        args = [(f"_s({w.atom(a)})" if len(a.shape) == 0 else w.atom(a)) for a in kw.arg_atoms]
        if fn is None:
            fn = getattr(module, step.name)
            _warm(fn, kw.arg_atoms, step.outputs)
        else:  # LLVM kernels read C-contiguous arrays: a constant is made one once
            for a, arg in zip(kw.arg_atoms, args):
                if isinstance(a, Const) and len(a.shape):
                    w.ns[arg] = np.ascontiguousarray(w.ns[arg])
        w.ns[step.name] = fn
        outs = [w.names[v] for v in step.outputs]
        lines += [f"    {o} = np.empty({v.shape!r}, np.{_dtype(v)})"
                  for o, v in zip(outs, step.outputs)]
        call = (f"{step.name}({', '.join(args + outs)})  # {step.ops} ops over {step.domain}"
                f" [{step.route}]")
        sums = [w.names[e.out] for e in step.reductions]
        lines.append(f"    {', '.join(sums)}, = {call}" if sums else f"    {call}")
        for e in step.reductions:  # kernels hand sums back as Python floats
            lines.append(f"    {w.names[e.out]} = np.{_dtype(e.out)}({w.names[e.out]})")
    lines.append(f"    return ({', '.join(w.atom(a) for a in graph.outputs)},)")
    source = "\n".join(lines) + "\n"
    return source, "".join(kernel_src), compile_source(source, w.ns, name)


def kernel_routes(plan: FusionPlan) -> FusionPlan:
    """``plan`` with each kernel's ``route`` as :func:`compile_plan` would take it, found
    without compiling (``diffkit show --code``): "llvm" where :mod:`.llvm_kernels` lowers
    the kernel's source, else "numba"."""
    names = plan.graph.names()
    for k in plan.kernels:
        kw = KernelWriter(plan, k, names)
        src = kw.source()
        k.route = "llvm" if lowerable(src, *_operands(kw)) else "numba"
    return plan


def _operands(kw: KernelWriter) -> tuple[list[tuple], list[tuple]]:
    """What :func:`.llvm_kernels.lower` needs of a written kernel's arguments: per input
    ``("scalar" | "array", dtype, shape)``, per output ``(dtype, shape)``."""
    inputs = [("scalar" if len(a.shape) == 0 else "array", a.dtype, tuple(a.shape))
              for a in kw.arg_atoms]
    return inputs, [(v.dtype, v.shape) for v in kw.kernel.outputs]


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


def _load(kernels: list[str], parallel: bool) -> Any:
    """Import the kernels' module (written once per source, keyed by its hash)."""
    deco = f"@njit(cache=True, error_model='numpy', fastmath={{'reassoc'}}{', parallel=True' if parallel else ''})\n"
    return import_source("import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n\n"
                         + "\n\n".join(deco + k for k in kernels))


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


def fused_program(graph: Graph, name: str = "f", parallel: bool = False
                  ) -> tuple[FusionPlan, tuple[str, str, Callable[..., tuple]] | None]:
    """The fusion plan of ``graph`` and, when numba is there and something fuses, the
    compiled ``(driver source, kernel source, driver)``; else None (keep numpy code)."""
    plan = fuse(graph)
    if not plan.kernels or numba_or_none() is None:
        return plan, None
    return plan, compile_plan(plan, name, parallel)
