"""The tape VM: a scalar program as arrays, run by one compiled interpreter.

A scalar program (every value a float64 number: a loop unrolled at trace time, a formula
of a few variables, see :func:`.codegen.is_scalar`) has thousands of one-number lines.
As Python floats each line costs ~0.1 µs of interpreter overhead; compiled with Numba
line by line, type inference over thousands of statements costs seconds per program.
Here the program becomes *data* instead, a tape:

* ``code``: one row per equation, ``(opcode, a, b, c)``, operands as register numbers;
* ``regs``: the float64 register file: inputs, then constants, then one register per
  equation (row ``k`` writes register ``base + k``).

One interpreter, :func:`interpret`, a loop over the rows that switches on the opcode, is
compiled by Numba once per machine (``cache=True``: later processes load it from Numba's
cache) and runs every tape. Building a program is encoding its graph (milliseconds); a
call writes the inputs, runs the loop and reads the outputs. Semantics are numpy
float64's (``error_model="numpy"``): ``log(0.0)`` is ``-inf``, ``0/0`` is nan, an
overflow is inf, never an exception; comparisons write 1.0 or 0.0 and a boolean output
comes back as a numpy bool. A graph with an equation the VM has no opcode for keeps the
plain-float program.

>>> import diffkit.numpy as dnp
>>> from diffkit.interpreters.tracer import trace
>>> tape = encode(trace(lambda x, y: dnp.where(x > y, dnp.log(x) * 2.0, y), (3.0, 1.0)))
>>> print(tape.listing())
r2 = 2.0
r3 = greater(r0, r1)
r4 = log(r0)
r5 = mul(r4, r2)
r6 = select(r3, r5, r1)
return r6
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .codegen import is_scalar
from .ir import Const, Graph, Var
from .kernels import numba_or_none

# opcodes (the interpreter tests them in this order: the common ones first)
(MUL, ADD, SUB, DIV, NEG, SIN, COS, EXP, LOG, TANH, POWER, SQRT, ABS, SIGMOID, SELECT,
 GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, EQUAL, NOT_EQUAL, MAXIMUM, MINIMUM, SIGN, TAN,
 SINH, COSH, ARCSIN, ARCCOS, ARCTAN, ARCSINH, ARCCOSH, ARCTANH, LOG1P, EXPM1, EXP2, ARCTAN2,
 HYPOT) = range(38)

#: primitive name -> (opcode, number of operands)
OPCODES: dict[str, tuple[int, int]] = {
    "mul": (MUL, 2), "add": (ADD, 2), "sub": (SUB, 2), "div": (DIV, 2), "neg": (NEG, 1),
    "sin": (SIN, 1), "cos": (COS, 1), "exp": (EXP, 1), "log": (LOG, 1), "tanh": (TANH, 1),
    "power": (POWER, 2), "sqrt": (SQRT, 1), "abs": (ABS, 1), "sigmoid": (SIGMOID, 1),
    "select": (SELECT, 3), "greater": (GREATER, 2), "greater_equal": (GREATER_EQUAL, 2),
    "less": (LESS, 2), "less_equal": (LESS_EQUAL, 2), "equal": (EQUAL, 2),
    "not_equal": (NOT_EQUAL, 2), "maximum": (MAXIMUM, 2), "minimum": (MINIMUM, 2),
    "sign": (SIGN, 1), "tan": (TAN, 1), "sinh": (SINH, 1), "cosh": (COSH, 1),
    "arcsin": (ARCSIN, 1), "arccos": (ARCCOS, 1), "arctan": (ARCTAN, 1),
    "arcsinh": (ARCSINH, 1), "arccosh": (ARCCOSH, 1), "arctanh": (ARCTANH, 1),
    "log1p": (LOG1P, 1), "expm1": (EXPM1, 1), "exp2": (EXP2, 1),
    "arctan2": (ARCTAN2, 2), "hypot": (HYPOT, 2),
}
_NAMES = {op: name for name, (op, _) in OPCODES.items()}
SIGNATURE = "float64[::1](int32[:, ::1], float64[::1], float64[::1], int32[::1])"


def interpret(code: np.ndarray, regs: np.ndarray, inputs: np.ndarray,
              outputs: np.ndarray) -> np.ndarray:
    """Run a tape: write ``inputs`` to the first registers, then row ``k`` of ``code``
    into register ``base + k``; return the registers ``outputs`` names. Plain Python
    here; :func:`interpreter` is the same function compiled by Numba."""
    for i in range(inputs.size):
        regs[i] = inputs[i]
    base = regs.size - code.shape[0]
    for k in range(code.shape[0]):
        op = code[k, 0]
        a = regs[code[k, 1]]
        b = regs[code[k, 2]]
        if op == MUL:
            r = a * b
        elif op == ADD:
            r = a + b
        elif op == SUB:
            r = a - b
        elif op == DIV:
            r = a / b
        elif op == NEG:
            r = -a
        elif op == SIN:
            r = math.sin(a)
        elif op == COS:
            r = math.cos(a)
        elif op == EXP:
            r = math.exp(a)
        elif op == LOG:
            r = math.log(a)
        elif op == TANH:
            r = math.tanh(a)
        elif op == POWER:
            r = math.pow(a, b)
        elif op == SQRT:
            r = math.sqrt(a)
        elif op == ABS:
            r = abs(a)
        elif op == SIGMOID:  # as the primitive computes it: stable for large |x|
            r = 0.5 * math.tanh(0.5 * a) + 0.5
        elif op == SELECT:
            r = b if a != 0.0 else regs[code[k, 3]]
        elif op == GREATER:
            r = 1.0 if a > b else 0.0
        elif op == GREATER_EQUAL:
            r = 1.0 if a >= b else 0.0
        elif op == LESS:
            r = 1.0 if a < b else 0.0
        elif op == LESS_EQUAL:
            r = 1.0 if a <= b else 0.0
        elif op == EQUAL:
            r = 1.0 if a == b else 0.0
        elif op == NOT_EQUAL:
            r = 1.0 if a != b else 0.0
        elif op == MAXIMUM:  # numpy's: a nan on either side wins
            r = a if (a >= b or a != a) else b
        elif op == MINIMUM:
            r = a if (a <= b or a != a) else b
        elif op == SIGN:
            r = 1.0 if a > 0.0 else (-1.0 if a < 0.0 else (0.0 if a == 0.0 else a))
        elif op == TAN:
            r = math.tan(a)
        elif op == SINH:
            r = math.sinh(a)
        elif op == COSH:
            r = math.cosh(a)
        elif op == ARCSIN:
            r = math.asin(a)
        elif op == ARCCOS:
            r = math.acos(a)
        elif op == ARCTAN:
            r = math.atan(a)
        elif op == ARCSINH:
            r = math.asinh(a)
        elif op == ARCCOSH:
            r = math.acosh(a)
        elif op == ARCTANH:
            r = math.atanh(a)
        elif op == LOG1P:
            r = math.log1p(a)
        elif op == EXPM1:
            r = math.expm1(a)
        elif op == EXP2:
            r = math.pow(2.0, a)
        elif op == ARCTAN2:
            r = math.atan2(a, b)
        else:  # HYPOT (encode writes no other opcode)
            r = math.hypot(a, b)
        regs[base + k] = r
    out = np.empty(outputs.size)
    for i in range(outputs.size):
        out[i] = regs[outputs[i]]
    return out


_compiled: list[Callable[..., np.ndarray]] = []


def interpreter() -> Callable[..., np.ndarray] | None:
    """:func:`interpret` compiled by Numba (once per process; from Numba's on-disk cache
    after the first time on this machine), or None without numba (said once)."""
    if not _compiled:
        numba = numba_or_none()
        if numba is None:
            return None
        _compiled.append(numba.njit(SIGNATURE, cache=True, error_model="numpy")(interpret))
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
            args = ", ".join(f"r{r}" for r in ins[:OPCODES[_NAMES[op]][1]])
            lines.append(f"r{base + k} = {_NAMES[op]}({args})")
        shown = [repr(self.fixed[k]) if k in self.fixed else f"r{r}"
                 for k, r in enumerate(self.outputs.tolist())]
        return "\n".join(lines + [f"return {', '.join(shown)}"])


def _number(a: Any) -> float | None:
    """A literal or 0-d constant operand as a float (None: not a real number, or an
    integer a float64 does not hold exactly)."""
    v = a.value if isinstance(a, Const) else a
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_, float, np.floating)):
        return float(v)
    if isinstance(v, (int, np.integer)) and abs(int(v)) <= 2 ** 53:
        return float(v)
    return None


def encode(graph: Graph) -> Bytecode | None:
    """``graph`` as a tape (run by plain Python until :func:`scalar_program` gives it the
    compiled interpreter), or None when some equation has no opcode."""
    if not is_scalar(graph):
        return None
    base = len(graph.inputs)
    consts: dict[bytes, int] = {}  # constants by their bits (0.0 and -0.0 apart)
    for e in graph.eqns:
        op = OPCODES.get(e.prim.name)
        if op is None or e.params or len(e.inputs) != op[1]:
            return None
        for a in e.inputs:
            if not isinstance(a, Var):
                v = _number(a)
                if v is None:
                    return None
                consts.setdefault(np.float64(v).tobytes(), base + len(consts))
    first = base + len(consts)
    regs: dict[Var, int] = {v: k for k, v in enumerate(graph.inputs)}
    regs.update((e.out, first + k) for k, e in enumerate(graph.eqns))

    def operand(a: Any) -> int:
        return regs[a] if isinstance(a, Var) else consts[np.float64(_number(a)).tobytes()]

    rows = [(OPCODES[e.prim.name][0], *map(operand, e.inputs), *[0] * (3 - len(e.inputs)))
            for e in graph.eqns]
    outputs, bools, fixed = [], [], {}
    for k, a in enumerate(graph.outputs):
        if isinstance(a, Var):
            outputs.append(regs[a])
            if a.dtype == np.bool_:
                bools.append(k)
        else:  # a constant result: handed back as the plain-float program would
            v = a.value if isinstance(a, Const) else a
            fixed[k] = np.float64(v) if type(v) is float else np.bool_(v) if type(v) is bool \
                else v
            outputs.append(0)
    file = np.zeros(max(first + len(rows), 1))  # (never empty: outputs read a register)
    file[base:first] = np.frombuffer(b"".join(consts), np.float64)
    code = np.array(rows, np.int32).reshape(len(rows), 4)
    return Bytecode(code, file, np.array(outputs, np.int32), base, bools, fixed)


def scalar_program(graph: Graph) -> tuple[Bytecode | None, str]:
    """The tape of a scalar ``graph`` on the compiled interpreter and its report, or
    ``(None, why it runs on plain floats)``."""
    tape = encode(graph)
    if tape is None:
        missing = sorted({e.prim.name for e in graph.eqns if e.prim.name not in OPCODES})
        why = (f"no VM opcode for {', '.join(missing)}" if missing else
               "an operand or parameter the VM does not take")
        return None, f"scalar program on plain floats ({why})"
    run = interpreter()
    if run is None:
        return None, "scalar program on plain floats (numba missing)"
    tape.run = run
    return tape, tape.report()
