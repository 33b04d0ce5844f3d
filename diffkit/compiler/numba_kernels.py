"""The Numba renderer: a kernel's typed program (:mod:`.kernel_ir`) as Python source for
``numba.njit``, the module of a program's Numba kernels, and when threads pay.

A kernel the LLVM renderer (:mod:`.llvm_kernels`) does not take — float32 or integer
arrays — is written here as the loop :mod:`.driver` describes and compiled as
``@njit(cache=True, error_model='numpy', fastmath={'reassoc'})`` (without ``reassoc`` where
a matrix-vector pair's sums keep their order): no array allocated inside
(no runtime calls), float64 functions as :mod:`math` calls, numbers in the kernel's float32
where it computes in float32. ``parallel=True`` splits the outer loop over threads (a
``prange``) only where :func:`threads_pay`. Numba is optional (``pip install
diffkit[jit]``): without it :func:`numba_or_none` says so once.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..ir.graph import Var
from ..primitives.lowering import OPS, ScalarExpr
from . import formulas
from .kernel_cache import import_source
from .kernel_ir import Instr, KernelIR, Operand, index_text

MISSING = ("numba is not installed, so fuse=True runs the unfused numpy program (plain "
           "floats for a scalar one); for fused kernels and the scalar tape VM: "
           "pip install diffkit[jit]")
_said_missing = False


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


def threads_pay(ir: KernelIR) -> bool:
    """Whether splitting the kernel's outer loop over threads gains: enough elements, and
    enough transcendental work per memory access (see :data:`ACCESSES_PER_CALL`; the
    functions of :data:`.formulas.CHEAP_CALLS` are not such work).

    >>> import numpy as np, diffkit.numpy as dnp
    >>> from diffkit.compiler.fusion import fuse
    >>> from diffkit.compiler.kernel_ir import build
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
                and i.op not in formulas.CHEAP_CALLS)
    accesses = sum(1 for i in instrs if i.op in ("load", "store"))
    if ir.matvec is not None or any(i.op == "add_at" for i in instrs):
        return False  # one thread: rows added to one output (threads would race)
    return int(np.prod(ir.domain)) >= PARALLEL_MIN_SIZE and calls > 0 and \
        calls * ACCESSES_PER_CALL >= accesses


def numba_source(ir: KernelIR, parallel: bool = False) -> str:
    """The kernel as Python source for ``numba.njit``, decorated: inputs, then the arrays
    to write (``o0, o1 ...``); it returns the fused sums, if any. The outer loop is a
    ``prange`` when ``parallel`` (compiled with ``parallel=True``). Its additions may be
    reassociated (so a fused sum vectorizes), except in a kernel with a matrix-vector
    pair, whose products keep :class:`.MatvecLoops`' order (LLVM inlines them into the
    kernel, where ``reassoc`` would reach them)."""
    flags = "" if ir.matvec else ", fastmath={'reassoc'}"
    lines = [f"@njit(cache=True, error_model='numpy'{flags}"
             f"{', parallel=True' if parallel else ''})",
             f"def {ir.name}({', '.join(p.name for p in ir.params)}):"]
    lines += [f"    s{k} = 0.0" for k in range(ir.sums)]
    mv = ir.matvec
    if mv:  # rows = X @ w first (Numba's route takes two passes)
        lines.append(f"    {ir.name}_rows({mv.matrix}, {mv.vector}, {mv.rows})")
    for axis, n in enumerate(ir.domain):
        loop = "prange" if parallel and axis == 0 else "range"
        lines.append("    " * (axis + 1) + f"for i{axis} in {loop}({n}):")
    full = ", ".join(f"i{a}" for a in range(len(ir.domain)))
    lines += _statements(ir.body, len(ir.domain) + 1, full)
    if mv:
        lines.append(f"    {ir.name}_spread({mv.matrix}, {mv.grad}, {mv.out})")
    if ir.sums:
        lines.append(f"    return ({', '.join(f's{k}' for k in range(ir.sums))},)")
    return "\n".join(lines) + "\n" + (_matvec_source(ir.name, mv.lanes) if mv else "")


def _matvec_source(name: str, lanes: int) -> str:
    """The two products of a kernel's matrix-vector pair in :class:`.MatvecLoops`' order."""
    k = range(lanes)
    return "\n".join([
        "", "", "@njit(cache=True, error_model='numpy')", f"def {name}_rows(X, w, rows):",
        "    w = w.reshape(-1)", "    d = X.shape[1]", f"    whole = d - d % {lanes}",
        "    for r in range(X.shape[0]):", *[f"        lane{i} = 0.0" for i in k],
        f"        for j in range(0, whole, {lanes}):",
        *[f"            lane{i} += X[r, j + {i}] * w[j + {i}]" for i in k],
        f"        acc = {' + '.join(f'lane{i}' for i in k)}",
        "        for j in range(whole, d):", "            acc += X[r, j] * w[j]",
        "        rows[r] = acc", "", "",
        "@njit(cache=True, error_model='numpy')", f"def {name}_spread(X, grad, out):",
        "    out = out.reshape(-1)", "    out[:] = 0.0", "    for r in range(X.shape[0]):",
        "        for j in range(X.shape[1]):", "            out[j] += grad[r] * X[r, j]", ""])


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


def dtype_name(v: Var) -> str:
    return "bool_" if v.dtype.kind == "b" else v.dtype.name


def load(kernels: list[str]) -> Any:
    """Import the kernels' module (written once per source, keyed by its hash)."""
    return import_source("import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n\n"
                         + "\n\n".join(kernels))
