"""The tape VM: a scalar program as arrays, run by one compiled interpreter.

A scalar program (every value a float64 number: a loop unrolled at trace time, a formula
of a few variables, see :func:`.codegen.is_scalar`) has thousands of one-number lines.
As Python floats each line costs ~0.1 µs of interpreter overhead; compiled with Numba
line by line, type inference over thousands of statements costs seconds per program.
Here the program becomes *data* instead, a tape:

* ``code``: one row per scalar operation, ``(opcode, a, b, c)``, operands as register
  numbers: an equation is the rows of its formula in the lowering registry
  (:mod:`diffkit.primitives.lowering`), so the VM computes what a fused kernel does;
* ``regs``: the float64 register file: inputs, then constants, then one register per
  row (row ``k`` writes register ``base + k``).

One interpreter, :func:`interpret`, a loop over the rows that switches on the opcode
(generated from the registry's scalar operations, one branch each), is compiled by
Numba once per machine (``cache=True``: later processes load it from Numba's cache) and
runs every tape. Building a program is encoding its graph (milliseconds); a
call writes the inputs, runs the loop and reads the outputs. Semantics are numpy
float64's (``error_model="numpy"``): ``log(0.0)`` is ``-inf``, ``0/0`` is nan, an
overflow is inf, never an exception; comparisons write 1.0 or 0.0 and a boolean output
comes back as a numpy bool. A graph with an equation that has no lowering keeps the
plain-float program.

>>> import diffkit.numpy as dnp
>>> from diffkit.ir.tracer import trace_graph
>>> tape = encode(trace_graph(lambda x, y: dnp.where(x > y, dnp.log(x) * 2.0, y), (3.0, 1.0)))
>>> print(tape.listing())
r2 = 2.0
r3 = greater(r0, r1)
r4 = log(r0)
r5 = mul(r4, r2)
r6 = select(r3, r5, r1)
return r6
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..primitives.lowering import OPS, ScalarExpr
from . import formulas
from .codegen import compile_source, is_scalar
from ..ir.graph import Const, Graph, Var
from .kernel_cache import import_source
from .numba_kernels import numba_or_none

#: opcode -> scalar operation (the lowering registry's, in its order: common ones first)
NAMES = list(OPS)
SIGNATURE = "float64[::1](int32[:, ::1], float64[::1], float64[::1], int32[::1])"


def _branch(name: str) -> str:
    """What row ``op == name`` computes from its operand registers ``a, b, c``: the
    operation as Python spells it, masks as 1.0 and 0.0."""
    op = OPS[name]
    if op.kind == "select":
        return "b if a != 0.0 else c"
    text = formulas.python(ScalarExpr(name, tuple(map(ScalarExpr.arg, range(op.arity)))),
                           ["a", "b", "c"])
    return f"1.0 if {text} else 0.0" if op.kind == "compare" else text


def interpreter_source() -> str:
    """The interpreter as Python source: a loop over the rows, one branch per operation
    of :data:`~diffkit.primitives.lowering.OPS`, generated from it."""
    branches = [f"        {'if' if k == 0 else 'elif'} op == {k}:\n            r = {_branch(n)}"
                for k, n in enumerate(NAMES[:-1])]
    branches.append(f"        else:\n            r = {_branch(NAMES[-1])}")
    return "\n".join([
        "import math", "", "import numpy as np", "", "",
        "def interpret(code, regs, inputs, outputs):",
        "    for i in range(inputs.size):", "        regs[i] = inputs[i]",
        "    base = regs.size - code.shape[0]",
        "    for k in range(code.shape[0]):", "        op = code[k, 0]",
        "        a = regs[code[k, 1]]", "        b = regs[code[k, 2]]",
        "        c = regs[code[k, 3]]", *branches,
        "        regs[base + k] = r", "    out = np.empty(outputs.size)",
        "    for i in range(outputs.size):", "        out[i] = regs[outputs[i]]",
        "    return out", ""])


_compiled: list[Callable[..., np.ndarray]] = []
_plain: list[Callable[..., np.ndarray]] = []


def interpret(code: np.ndarray, regs: np.ndarray, inputs: np.ndarray,
              outputs: np.ndarray) -> np.ndarray:
    """Run a tape: write ``inputs`` to the first registers, then row ``k`` of ``code``
    into register ``base + k``; return the registers ``outputs`` names. Plain Python
    (:func:`interpreter_source`); :func:`interpreter` is the same function compiled."""
    if not _plain:
        _plain.append(compile_source(interpreter_source(), {}, "interpret"))
    return _plain[0](code, regs, inputs, outputs)


def interpreter() -> Callable[..., np.ndarray] | None:
    """:func:`interpret` compiled by Numba (once per process; from Numba's on-disk cache
    after the first time on this machine), or None without numba (said once)."""
    if not _compiled:
        numba = numba_or_none()
        if numba is None:
            return None
        module = import_source(interpreter_source())
        _compiled.append(numba.njit(SIGNATURE, cache=True, error_model="numpy")(
            module.interpret))
    return _compiled[0]


@dataclass(eq=False)
class Bytecode:
    """A scalar graph encoded for the VM, with its preallocated register file."""

    code: np.ndarray                # int32 rows (opcode, a, b, c)
    regs: np.ndarray                # float64: inputs, constants (filled in), equations
    outputs: np.ndarray             # int32 register of each output (0 for a fixed one)
    n_inputs: int = 0
    bools: list[int] = field(default_factory=list)            # outputs of dtype bool
    fixed: dict[int, Any] = field(default_factory=dict)       # outputs that are no register
    run: Callable[..., np.ndarray] = interpret

    def __call__(self, leaves: Sequence[Any]) -> list[Any]:
        """The outputs at these input values (numpy float64 / bool scalars)."""
        outs: list[Any] = list(self.run(self.code, self.regs, np.array(leaves, np.float64),
                                        self.outputs))
        for k in self.bools:
            outs[k] = outs[k] != 0.0
        for k, v in self.fixed.items():
            outs[k] = v
        return outs

    def function(self) -> Callable[..., tuple]:
        """The tape as a function of the inputs returning a tuple, as generated code does."""
        return lambda *leaves: tuple(self(leaves))

    def report(self) -> str:
        """``scalar program: 4,494 instructions on the tape VM``."""
        return f"scalar program: {len(self.code):,} instructions on the tape VM"

    def listing(self) -> str:
        """The tape as text, one ``r5 = log(r0)`` line per row (registers by number)."""
        base = len(self.regs) - len(self.code)
        lines = [f"r{r} = {float(self.regs[r])!r}" for r in range(self.n_inputs, base)]
        for k, (op, *ins) in enumerate(self.code.tolist()):
            args = ", ".join(f"r{r}" for r in ins[:OPS[NAMES[op]].arity])
            lines.append(f"r{base + k} = {NAMES[op]}({args})")
        shown = [repr(self.fixed[k]) if k in self.fixed else f"r{r}"
                 for k, r in enumerate(self.outputs.tolist())]
        return "\n".join(lines + [f"return {', '.join(shown)}"])


def _number(a: Any) -> float | None:
    """A number operand as a float (None: not a real number, or an integer a float64 does
    not hold exactly)."""
    v = formulas.constant(a)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2 ** 53:
        return None
    return None if v is None else float(v)


def encode(graph: Graph) -> Bytecode | None:
    """``graph`` as a tape (run by plain Python until :func:`scalar_program` gives it the
    compiled interpreter), or None when some equation has no lowering. Each equation
    becomes the rows of its formula (the lowering registry's): ``sigmoid`` is seven."""
    if not is_scalar(graph):
        return None
    rows: list[tuple[str, list[Any]]] = []   # operation, operands: Var, ("c", bits), row
    value: dict[Var, Any] = {v: v for v in graph.inputs}
    consts: dict[bytes, None] = {}           # constants by their bits (0.0 and -0.0 apart)

    def lay(f: ScalarExpr, operands: list[Any], done: dict[int, Any]) -> Any:
        """The rows of ``f``: a subtree a formula shares (``m`` in numpy's mod) once."""
        if f.op == "arg":
            return operands[f.value]
        if f.op == "const":
            bits = np.float64(f.value).tobytes()
            consts[bits] = None
            return ("c", bits)
        if id(f) not in done:
            rows.append((f.op, [lay(a, operands, done) for a in f.args]))
            done[id(f)] = len(rows) - 1
        return done[id(f)]

    for e in graph.eqns:
        f = formulas.of(e)
        if f is None:
            return None
        operands = []
        for a in e.inputs:
            v = _number(a) if not isinstance(a, Var) else None
            if v is None and not isinstance(a, Var):
                return None
            operands.append(value[a] if isinstance(a, Var) else lay(ScalarExpr.const(v), [], {}))
        value[e.out] = lay(f, operands, {})
    base = len(graph.inputs)
    const_reg = {bits: base + k for k, bits in enumerate(consts)}
    first = base + len(consts)
    regs = {v: k for k, v in enumerate(graph.inputs)}

    def register(ref: Any) -> int:
        if isinstance(ref, int):
            return first + ref
        return const_reg[ref[1]] if isinstance(ref, tuple) else regs[ref]

    code = [(NAMES.index(op), *map(register, ins), *[0] * (3 - len(ins))) for op, ins in rows]
    outputs, bools, fixed = [], [], {}
    for k, a in enumerate(graph.outputs):
        if isinstance(a, Var):
            outputs.append(register(value[a]))
            if a.dtype == np.bool_:
                bools.append(k)
        else:  # a constant result: handed back as the plain-float program would
            v = a.value if isinstance(a, Const) else a
            fixed[k] = np.float64(v) if type(v) is float else np.bool_(v) if type(v) is bool \
                else v
            outputs.append(0)
    file = np.zeros(max(first + len(code), 1))  # (never empty: outputs read a register)
    file[base:first] = np.frombuffer(b"".join(consts), np.float64)
    return Bytecode(np.array(code, np.int32).reshape(len(code), 4), file,
                    np.array(outputs, np.int32), base, bools, fixed)


def scalar_program(graph: Graph) -> tuple[Bytecode | None, str]:
    """The tape of a scalar ``graph`` on the compiled interpreter and its report, or
    ``(None, why it runs on plain floats)``."""
    tape = encode(graph)
    if tape is None:
        missing = sorted({e.prim.name for e in graph.eqns if formulas.of(e) is None})
        why = (f"no lowering for {', '.join(missing)}" if missing else
               "an operand or parameter the VM does not take")
        return None, f"scalar program on plain floats ({why})"
    run = interpreter()
    if run is None:
        return None, "scalar program on plain floats (numba missing)"
    tape.run = run
    return tape, tape.report()
