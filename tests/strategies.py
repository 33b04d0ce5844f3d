"""Random programs over the whole primitive table, and the differential oracle that judges them.

Used by ``tests/test_differential.py`` (hypothesis drives the draws, shrinks failures) and
by ``benchmarks/soak.py`` (a seeded ``random.Random`` drives the same generator; a small
tree shrinker minimises what it finds). Nothing here is a test by itself.

Programs
--------
A :class:`Program` is Python source (``def f(x): v1 = ...; return vN``) over
``diffkit.numpy`` (``dnp``) plus the point ``x`` and the derivative asked for
(``grad``, ``jacobian``, ``derivative``, ``hessian``). The source is what a failure
prints, and what a regression test pastes back (``Program(source, x, kind)``).

The generator builds straight-line code bottom-up, knowing the float64 value of every
variable at ``x`` as it goes, so each primitive can be kept *inside its domain and away
from its kinks by a margin*: ``log``/``sqrt`` of values >= 0.1, ``arcsin`` of values in
[-0.9, 0.9], ``abs``/``sign``/``relu`` and ``maximum``/``max`` away from their kinks and
ties, ``where``/``clip``/``if`` thresholds away from the compared values, divisors away from
zero. An operand that is not inside is *repaired* with a smooth map (``v*v + c``,
``0.9*tanh(v)``, a shift ``v + s``). A program is finally checked by :func:`validate`,
which runs it on probe boxes through ``diffkit.core.bind`` and checks every primitive's
arguments against the margins of :data:`MARGIN` (half the generator's), every value's
finiteness and size, and every comparison's distance to its threshold — the conditions
under which all five backends and the reference must agree.

The oracle and its tolerances
-----------------------------
:func:`judge` runs each backend on a program and compares with
``diffkit.bench.reference.reference`` (the exact sympy derivative evaluated in mpmath at 40
digits). Errors are max-norm: ``err = max|d - ref|``; the figure reported is
``err / max|ref|``. A backend agrees when ``err <= tol``:

* **AD (forward, reverse, forward-over-reverse, nested)**:
  ``tol = 1e-10 * max|ref| + 100 * sigma + 1e-13``. ``sigma`` is the *measured rounding
  sensitivity* of that very computation: the backend is rerun 3 times on inputs boxed by
  :class:`NoiseTrace`, which multiplies the result of every arithmetic primitive by
  ``1 + u`` with ``u`` uniform in [-eps, eps] (sums and matrix products get noise of
  size eps times the sum of the absolute terms): Monte Carlo arithmetic, which estimates
  how much rounding can move the result. A well-conditioned program has
  ``sigma ~ eps * max|ref|`` and the 1e-10 term dominates (a few ulps are far below it);
  a cancelling one has a large sigma and earns a wider tolerance, in proportion.
* **symbolic**: ``tol = 1e-12 * max|ref| + 100 * sigma + 1e-13``, sigma the larger of the
  forward and reverse ones (lambdified numpy code cannot be boxed; its float64
  evaluation of the same formulas has the same conditioning).
* **numeric** (default: central differences, order 2, step ``h = eps^(1/3) max(|x|, 1)``
  rounded to a power of two): its error model is truncation ``h^2 f'''/6`` plus
  round-off ``eps_f / h``. The test estimates both independently of the backend:
  truncation as ``|D(2h) - D(h)| / 3`` (its own central differences at h and 2h) and
  ``eps_f`` as the Monte Carlo spread of ``f`` itself (at least ``4 eps |f|``).
  ``tol = 1e-6 * max|ref| + 10 * max(truncation + 2 eps_f / h) + 1e-13``.

``sigma`` larger than ``1e-6 * max|ref|`` marks a program too ill-conditioned to judge:
it is counted as skipped, never as a pass.
"""

from __future__ import annotations

import ast
import math
import random
import re
import textwrap
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.core import Box, Interpreter, bind, new_level, primal

EPS = float(np.finfo(float).eps)
MARGIN = 0.05      # what validate() demands: distance to kinks, poles, domain edges, thresholds
REPAIR = 0.1       # what the generator aims for (twice the margin)
MAX_ABS = 1e4      # largest |value| of any intermediate
MAX_SIZE = 24      # largest array anywhere in a program
CONSTS = (0.5, 1.5, -0.75, 2.0, -1.25, 0.3, 3.0, -2.0)

AD_RTOL, SYMBOLIC_RTOL, NUMERIC_RTOL = 1e-10, 1e-12, 1e-6
SIGMA_FACTOR, NUMERIC_SAFETY, ABS_FLOOR = 100.0, 10.0, 1e-13
ILL_CONDITIONED = 1e-6   # sigma / max|ref| above this: too ill-conditioned to judge
BACKENDS = ("symbolic", "numeric", "forward", "reverse", "compiled")
HESSIAN_BACKENDS = (None, "reverse", "forward", "symbolic", "compiled")  # None: forward-over-reverse


# ----------------------------------------------------------------------------- draws


class RandomDraw:
    """Draws from a seeded ``random.Random`` (the soak)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.rng.randrange(len(seq))]

    def real(self, lo: float, hi: float) -> float:
        return self.rng.uniform(lo, hi)

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p


class HypothesisDraw:
    """The same draws through hypothesis, so failures shrink (towards the first choice,
    small integers, simple floats and ``False``)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def real(self, lo: float, hi: float) -> float:
        return self.draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False))

    def coin(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - round(100 * p)


# ----------------------------------------------------------------------------- programs


def _fmt_value(x: Any) -> str:
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return repr(float(x))
    return f"np.array({x.tolist()!r})"


@dataclass(frozen=True)
class Program:
    """A generated function: ``source`` defines ``f(x)``; ``kind`` is the derivative asked."""

    source: str
    x: Any
    kind: str = "grad"
    family: str = "straight"   # straight | elementwise | flow

    def function(self) -> Callable[[Any], Any]:
        namespace = {"dnp": dnp, "np": np}
        exec(compile(self.source, "<generated program>", "exec"), namespace)  # our own code
        return namespace["f"]

    def point(self) -> Any:
        x = np.array(self.x, dtype=float)
        return x[()] if x.ndim == 0 else x

    def __repr__(self) -> str:
        return (f"Program(kind={self.kind!r}, family={self.family!r}, x={_fmt_value(self.x)},"
                f" source='''\n{self.source}''')")

    def pretty(self) -> str:
        return f"# kind={self.kind} x={_fmt_value(self.x)}\n{self.source}"


@dataclass
class Var:
    name: str
    value: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape


class Rejected(Exception):
    """The draws did not give a usable program (the soak counts it; hypothesis rejects)."""


def _ok(v: np.ndarray | None, limit: float = MAX_ABS) -> bool:
    return v is not None and v.size <= MAX_SIZE and bool(np.all(np.isfinite(v))) \
        and (v.size == 0 or float(np.max(np.abs(v))) <= limit)


class Builder:
    """Straight-line code built bottom-up; every variable's value at x is known."""

    UNARY = ("sin", "exp", "log", "sqrt", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
             "cosh", "tanh", "sigmoid", "log1p", "abs", "sign", "relu", "neg")
    BINARY = ("+", "*", "-", "/", "maximum", "minimum")
    POWERS = (2, 3, -1, 0.5, 1.5, -2, 2.5, 4, 0, 1, 3.0)
    REDUCTIONS = ("sum", "mean", "prod", "max", "min", "logsumexp")
    max_lane = 4   # max/min over more entries: slow symbolic setup

    KINKED = ("abs", "sign", "relu", "maximum", "minimum", "max", "min", "where", "clip")

    def __init__(self, draw: Any, x: Any, elementwise: bool = False) -> None:
        self.d = draw
        self.elementwise = elementwise
        self.smooth = False  # True: no kinks, ties or selections (see build_flow)
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"x": x}
        self.pool = [Var("x", np.asarray(x, dtype=float))]
        self.count = 0

    # --- evaluation -------------------------------------------------------------------

    def value(self, expr: str) -> np.ndarray | None:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = eval(expr, {"dnp": dnp, "np": np}, dict(self.env))  # our own generated text
            self.last_raw = out
            return np.asarray(out, dtype=float)
        except Exception:
            return None

    def emit(self, expr: str, limit: float = MAX_ABS) -> Var | None:
        v = self.value(expr)
        if not _ok(v, limit):
            return None
        self.count += 1
        name = f"v{self.count}"
        self.lines.append(f"{name} = {expr}")
        self.env[name] = self.last_raw
        var = Var(name, v)
        self.pool.append(var)
        return var

    # --- operands ---------------------------------------------------------------------

    def pick(self) -> Var:
        if len(self.pool) == 1 or self.d.coin(0.6):
            return self.pool[-1]
        return self.d.choice(self.pool[::-1])

    def const(self, shape: tuple[int, ...]) -> str:
        if shape == () or self.elementwise:
            return repr(self.d.choice(CONSTS))
        vals = np.array([self.d.choice(CONSTS) for _ in range(math.prod(shape))]).reshape(shape)
        return f"np.array({vals.tolist()!r})"

    def partner(self, a: Var) -> tuple[str, np.ndarray] | None:
        """A second operand broadcasting with ``a``: another variable or a constant."""
        if self.d.coin(0.5):
            ok = [v for v in self.pool if _broadcasts(a.shape, v.shape)]
            if ok:
                b = self.d.choice(ok[::-1])
                return b.name, b.value
        shapes = [()]
        if not self.elementwise and a.shape:
            shapes += [a.shape, a.shape[-1:]]
            if len(a.shape) == 2:
                shapes.append((a.shape[0], 1))
            if math.prod(a.shape) * 2 <= MAX_SIZE and len(a.shape) < 3:
                shapes.append((2,) + a.shape)
        text = self.const(self.d.choice(shapes))
        v = self.value(text)
        return (text, v) if v is not None else None

    # --- repairs: (text, value) of an operand moved inside a domain --------------------

    def positive(self, e: str, v: np.ndarray) -> tuple[str, np.ndarray]:
        if v.size and v.min() >= REPAIR and self.d.coin(0.8):
            return e, v
        c = self.d.choice((0.25, 0.5, 1.0, 2.0))
        options = [f"({e} * {e} + {c})", f"(dnp.sigmoid({e}) + {REPAIR})", f"dnp.cosh({e})"]
        if v.size and v.max() <= 3 and v.min() >= -2:
            options.append(f"dnp.exp({e})")
        return self._first_ok(options, lambda w: w.min() >= REPAIR)

    def unit(self, e: str, v: np.ndarray) -> tuple[str, np.ndarray]:
        if v.size and np.abs(v).max() <= 1 - REPAIR and self.d.coin(0.8):
            return e, v
        s = self.d.choice((0.9, 0.5))
        return self._first_ok([f"({s} * dnp.tanh({e}))", f"({s} * dnp.sin({e}))"],
                              lambda w: np.abs(w).max() <= 1 - REPAIR)

    def bounded(self, e: str, v: np.ndarray, bound: float) -> tuple[str, np.ndarray]:
        if v.size and np.abs(v).max() <= bound and self.d.coin(0.8):
            return e, v
        return self._first_ok([f"dnp.tanh({e})", f"dnp.sin({e})", f"dnp.arctan({e})"],
                              lambda w: np.abs(w).max() <= bound)

    def away(self, e: str, v: np.ndarray, at: float = 0.0) -> tuple[str, np.ndarray] | None:
        """``e`` or ``e + s`` with every entry at least REPAIR from ``at`` (kinks)."""
        if v.size and np.abs(v - at).min() >= REPAIR and self.d.coin(0.85):
            return e, v
        shifts = [s for s in (0.5, -0.5, 1.25, -1.25, 2.5, -2.5) if np.abs(v + s - at).min() >= REPAIR]
        if not shifts:
            return None
        s = self.d.choice(shifts)
        return self._first_ok([f"({e} + {s})" if s > 0 else f"({e} - {-s})"], lambda w: True)

    def _first_ok(self, options: list[str], good: Callable[[np.ndarray], bool]) -> tuple[str, np.ndarray]:
        start = self.d.integer(0, len(options) - 1)
        for text in options[start:] + options[:start]:
            w = self.value(text)
            if _ok(w) and w.size and good(w):
                return text, w
        raise Rejected("no repair fits")

    # --- operations -------------------------------------------------------------------

    def step(self) -> Var | None:
        if self.elementwise:
            kinds = ("unary", "binary", "power", "where", "clip")
        else:
            kinds = ("unary", "binary", "reduce", "index", "power", "structure", "where",
                     "matmul", "clip")
        if self.smooth:
            kinds = tuple(k for k in kinds if k not in self.KINKED)
        kind = self.d.choice(kinds)
        a = self.pick()
        op = getattr(self, f"op_{kind}")(a)
        return None if op is None else self.emit(op)

    def op_unary(self, a: Var) -> str | None:
        name = self.d.choice(self.UNARY)
        if self.smooth and name in self.KINKED:
            return None
        e, v = a.name, a.value
        if name in ("log", "sqrt"):
            e, v = self.positive(e, v)
        elif name == "log1p":
            e, v = self.positive(e, v) if v.size and v.min() < -1 + REPAIR else (e, v)
        elif name in ("arcsin", "arccos"):
            e, v = self.unit(e, v)
        elif name in ("exp", "sinh", "cosh"):
            e, v = self.bounded(e, v, 4.0)
        elif name == "tan":
            e, v = self.bounded(e, v, 1.2)
        elif name in ("abs", "sign", "relu"):
            got = self.away(e, v)
            if got is None:
                return None
            e, v = got
        if name == "neg":
            return f"(-{e})"
        if name == "abs" and self.d.coin(0.3):
            return f"abs({e})"
        return f"dnp.{name}({e})"

    def op_binary(self, a: Var) -> str | None:
        op = self.d.choice(self.BINARY)
        if self.smooth and op in self.KINKED:
            return None
        got = self.partner(a)
        if got is None:
            return None
        e, v = got
        if op == "/":
            if v.size and np.abs(v).min() < REPAIR:
                e, v = self.positive(e, v)
        if op in ("maximum", "minimum"):
            diff = v - a.value
            if not diff.size or np.abs(diff).min() < REPAIR:
                shifts = [s for s in (0.5, -0.5, 1.25, -1.25) if np.abs(diff + s).min() >= REPAIR]
                if not shifts:
                    return None
                s = self.d.choice(shifts)
                e = f"({e} + {s})"
            first, second = (a.name, e) if self.d.coin(0.7) else (e, a.name)
            return f"dnp.{op}({first}, {second})"
        if self.d.coin(0.25):  # the function forms
            name = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}[op]
            return f"dnp.{name}({a.name}, {e})"
        if op in "+*" and self.d.coin(0.3):
            return f"({e} {op} {a.name})"
        return f"({a.name} {op} {e})"

    def op_power(self, a: Var) -> str | None:
        style = self.d.choice(("const", "const", "traced", "base"))
        if style == "const":
            p = self.d.choice(self.POWERS)
            e, v = a.name, a.value
            if isinstance(p, float) and not p.is_integer():
                e, v = self.positive(e, v)
            elif p < 0 and v.size and np.abs(v).min() < REPAIR:
                e, v = self.positive(e, v)
            return f"({e} ** {p})" if self.d.coin(0.7) else f"dnp.power({e}, {p})"
        if style == "traced":  # x ** y, both differentiated: base > 0, small exponent
            base_e, _ = self.positive(a.name, a.value)
            b = self.d.choice(self.pool[::-1])
            if not _broadcasts(a.shape, b.shape):
                return None
            exp_e, _ = self.bounded(b.name, b.value, 2.0)
            return f"({base_e} ** {exp_e})"
        e, _ = self.bounded(a.name, a.value, 2.0)  # constant ** traced
        return f"({self.d.choice((2.0, 0.5, 3.0))} ** {e})"

    def op_where(self, a: Var) -> str | None:
        other = self.partner(a)
        if other is None:
            return None
        cmp = self.d.choice((">", "<", ">=", "<="))
        x1, x2 = (a.name, other[0]) if self.d.coin(0.5) else (other[0], a.name)
        cond_var = self.d.choice([a] + [p for p in self.pool if p.shape == a.shape])
        t = self.threshold(cond_var.value)
        if t is None:
            return None
        return f"dnp.where({cond_var.name} {cmp} {t}, {x1}, {x2})"

    def op_clip(self, a: Var) -> str | None:
        lo = self.threshold(a.value)
        hi = self.threshold(a.value, above=lo)
        if lo is None or hi is None:
            return None
        if self.d.coin(0.2):
            lo = "None"
        return f"dnp.clip({a.name}, {lo}, {hi})"

    def threshold(self, v: np.ndarray, above: float | None = None) -> float | None:
        """A value at least REPAIR away from every entry of ``v`` (and > ``above``)."""
        flat = np.sort(np.ravel(v))
        cands = [0.0, 0.5, -0.5, 1.0, -1.0]
        cands += [round(float(m), 3) for m in (flat[1:] + flat[:-1]) / 2]
        if flat.size:
            cands += [round(float(flat[0]) - 0.5, 3), round(float(flat[-1]) + 0.5, 3)]
        good = [c for c in cands if (above is None or c > above + REPAIR)
                and (flat.size == 0 or np.abs(flat - c).min() >= REPAIR)]
        return self.d.choice(good) if good else None

    def op_reduce(self, a: Var) -> str | None:
        if a.value.ndim == 0:
            return None
        name = self.d.choice(self.REDUCTIONS)
        if self.smooth and name in self.KINKED:
            return None
        nd = a.value.ndim
        axes: list[Any] = [None] + list(range(nd)) + [-1]
        if nd >= 2:
            axes.append((0, 1))
        axis = self.d.choice(axes)
        keep = self.d.coin(0.3)
        if name in ("max", "min") and (not _gap_ok(a.value, axis, REPAIR)
                                       or _lane(a.value, axis) > self.max_lane):
            return None
        if name == "prod" and a.value.size > 8:
            return None
        args = "" if axis is None else f", axis={axis!r}"
        args += ", keepdims=True" if keep else ""
        if name in ("sum", "mean", "max", "min", "prod") and self.d.coin(0.2) and not keep:
            return f"{a.name}.{name}({'' if axis is None else repr(axis)})"
        return f"dnp.{name}({a.name}{args})"

    def op_index(self, a: Var) -> str | None:
        s = a.shape
        if not s:
            return None
        n = s[0]
        rng = np.random.default_rng(self.d.integer(0, 10**6))
        forms = [f"[{self.d.integer(-n, n - 1)}]", f"[{self.d.integer(0, n - 1)}:]",
                 "[::-1]", f"[:{self.d.integer(1, n)}]", "[::2]",
                 f"[np.array({rng.integers(0, n, self.d.integer(1, 4)).tolist()})]",
                 f"[np.array({_mask(rng, n)})]", "[None]", "[..., None]"]
        if len(s) >= 2:
            m = s[1]
            forms += [f"[:, {self.d.integer(-m, m - 1)}]", f"[{self.d.integer(0, n - 1)}, "
                      f"{self.d.integer(0, m - 1)}]", "[1:, ::-1]", f"[..., {self.d.integer(0, m - 1)}]",
                      f"[:, np.array({rng.integers(0, m, 3).tolist()})]",
                      f"[np.array({rng.integers(0, n, 2).tolist()}), "
                      f"np.array({rng.integers(0, m, 2).tolist()})]"]
        form = self.d.choice(forms)
        if self.value(f"{a.name}{form}") is None or self.value(f"{a.name}{form}").size == 0:
            return None
        return f"{a.name}{form}"

    def op_structure(self, a: Var) -> str | None:
        s = a.shape
        if not s:
            scalars = [v.name for v in self.pool if v.shape == ()]
            return f"dnp.stack([{a.name}, {self.d.choice(scalars[::-1])}, {self.const(())}])"
        size = math.prod(s)
        forms = [f"dnp.ravel({a.name})", f"dnp.expand_dims({a.name}, {self.d.integer(0, len(s))})",
                 f"dnp.concatenate([{a.name}, {self.same_shape(a)}], axis={self.d.integer(0, len(s) - 1)})",
                 f"dnp.stack([{a.name}, {self.same_shape(a)}], axis={self.d.integer(0, len(s))})"]
        shapes = [t for t in _factorisations(size) if t != s]
        if shapes:
            t = self.d.choice(shapes)
            forms.append(f"dnp.reshape({a.name}, {t!r})")
            forms.append(f"{a.name}.reshape({', '.join(map(str, t))})" if len(t) > 1 else
                         f"dnp.reshape({a.name}, -1)")
        if len(s) >= 2:
            forms += [f"{a.name}.T", f"dnp.transpose({a.name})"]
        if len(s) == 3:
            forms.append(f"dnp.transpose({a.name}, (1, 0, 2))")
        if size * 2 <= MAX_SIZE and len(s) < 3:
            forms.append(f"dnp.broadcast_to({a.name}, {(2,) + s!r})")
        return self.d.choice(forms)

    def same_shape(self, a: Var) -> str:
        same = [v for v in self.pool if v.shape == a.shape]
        if self.d.coin(0.5):
            return self.d.choice(same).name
        return self.const(a.shape)

    def op_matmul(self, a: Var) -> str | None:
        s = a.shape
        if not s or len(s) > 2:
            return None
        k = s[-1]
        partners = [v for v in self.pool if v.shape and len(v.shape) <= 2 and v.shape[0] == k
                    and math.prod(s[:-1] + v.shape[1:]) <= MAX_SIZE]
        if partners and self.d.coin(0.6):
            b = self.d.choice(partners).name
        elif len(s) == 2 and self.d.coin(0.5):
            b = f"{a.name}.T"
        else:
            b = self.const(self.d.choice(((k,), (k, 2))))
        style = self.d.choice(("@", "dot", "matmul"))
        if style == "@":
            return f"({a.name} @ {b})"
        return f"dnp.{style}({a.name}, {b})"

    # --- endings ----------------------------------------------------------------------

    def dead(self) -> list[Var]:
        """Values no later statement reads (a dead statement tests nothing)."""
        text = "\n".join(self.lines)
        out = []
        for var in self.pool[1:-1]:
            after = text[text.index(f"{var.name} = ") + len(var.name) + 3:]
            if not re.search(rf"\b{var.name}\b", after[after.find("\n"):] if "\n" in after else ""):
                out.append(var)
        return out

    def gather_dead(self) -> None:
        """Fold each dead value into the last one, so that every statement reaches the
        output: ``last + c * dead`` (or ``dead``'s sum, when the shapes differ; its tanh
        when that leaves the range). An elementwise program stays elementwise: no sums."""
        for var in self.dead():
            last, c = self.pool[-1], self.d.choice((0.5, -0.25, 1.5))
            if self.elementwise:
                terms = [var.name, f"dnp.tanh({var.name})"]
            else:
                terms = ([var.name] if var.shape in (last.shape, ()) else []) + [
                    f"dnp.sum({var.name})", f"dnp.tanh(dnp.sum({var.name}))"]
            if not any(self.emit(f"{last.name} + {c} * {t}") for t in terms):
                raise Rejected("a dead value could not reach the output")

    def finish(self, kind: str) -> str:
        self.gather_dead()
        last = self.pool[-1]
        if kind in ("grad", "hessian") and last.shape != ():
            choices = [f"dnp.sum({last.name})", f"dnp.mean({last.name})",
                       f"dnp.logsumexp({last.name})", f"dnp.sum({last.name} * {self.const(last.shape)})"]
            if _gap_ok(last.value, None, REPAIR) and last.value.size <= self.max_lane \
                    and not self.smooth:
                choices.append(f"dnp.max({last.name})")
            if last.value.size <= 4:
                choices.append(f"dnp.prod({last.name})")
            start = self.d.integer(0, len(choices) - 1)
            for text in choices[start:] + choices[:start]:
                if self.emit(text, limit=1e6):
                    break
            else:
                raise Rejected("no scalar ending")
        if kind == "jacobian":
            if last.shape == ():
                if not self.emit(f"dnp.stack([{last.name}, dnp.sin({last.name}), {last.name} * {last.name}])"):
                    raise Rejected("no vector ending")
            elif last.value.size > 8 or last.value.ndim > 1 and self.d.coin(0.5):
                if not self.emit(f"dnp.ravel({last.name})[:8]"):
                    raise Rejected("no vector ending")
        body = "\n".join(self.lines) + f"\nreturn {self.pool[-1].name}"
        return "def f(x):\n" + textwrap.indent(body, "    ") + "\n"


def _broadcasts(s1: tuple[int, ...], s2: tuple[int, ...]) -> bool:
    try:
        out = np.broadcast_shapes(s1, s2)
    except ValueError:
        return False
    return math.prod(out) <= MAX_SIZE


def _lane(v: np.ndarray, axis: Any) -> int:
    """Entries per lane of a reduction over ``axis``."""
    if axis is None:
        return int(v.size)
    axes = (axis,) if isinstance(axis, int) else axis
    return math.prod(v.shape[a] for a in axes)


def _gap_ok(v: np.ndarray, axis: Any, gap: float) -> bool:
    """Winner and runner-up of max/min along ``axis`` at least ``gap`` apart (no ties)."""
    v = np.asarray(v, dtype=float)
    if v.ndim == 0:
        return True
    axes = tuple(range(v.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = tuple(a % v.ndim for a in axes)
    moved = np.moveaxis(v, axes, tuple(range(-len(axes), 0)))
    lanes = moved.reshape(moved.shape[: moved.ndim - len(axes)] + (-1,))
    if lanes.shape[-1] < 2:
        return True
    s = np.sort(lanes, axis=-1)
    return bool(np.all(s[..., -1] - s[..., -2] >= gap) and np.all(s[..., 1] - s[..., 0] >= gap))


def _mask(rng: np.random.Generator, n: int) -> list[bool]:
    m = rng.random(n) < 0.6
    m[rng.integers(0, n)] = True
    return m.tolist()


def _factorisations(n: int) -> list[tuple[int, ...]]:
    out = [(n,), (1, n), (n, 1)]
    for a in range(2, n):
        if n % a == 0:
            out.append((a, n // a))
            for b in range(2, n // a):
                if (n // a) % b == 0:
                    out.append((a, b, n // a // b))
    return out


SHAPES = ((), (1,), (2,), (3,), (4,), (2, 2), (2, 3), (3, 2), (5,), (1, 3))


def draw_point(d: Any, shape: tuple[int, ...]) -> Any:
    vals = [round(d.real(-2.0, 2.0), 6) for _ in range(math.prod(shape))]
    x = np.array(vals, dtype=float).reshape(shape)
    return x[()] if shape == () else x


def build_program(d: Any, kind: str = "grad", max_ops: int = 6,
                  shapes: Sequence[tuple[int, ...]] = SHAPES) -> Program:
    """A straight-line program over the primitive table (reductions, indexing,
    broadcasting, matmul, where, clip, powers, every unary function)."""
    if kind == "hessian":
        shapes = [s for s in shapes if math.prod(s) <= 4]
    x = draw_point(d, d.choice(shapes))
    b = Builder(d, x)
    for _ in range(d.integer(1, max_ops)):
        b.step()
    return Program(b.finish(kind), x, kind, "straight")


def build_elementwise(d: Any, max_ops: int = 5) -> Program:
    """An elementwise f: R -> R (for dk.derivative over an array of points)."""
    x = draw_point(d, (d.integer(1, 4),))
    b = Builder(d, x, elementwise=True)
    for _ in range(d.integer(1, max_ops)):
        b.step()
    return Program(b.finish("derivative"), x, "derivative", "elementwise")


FLOW_BODIES = (  # v -> new v, same shape; contractive or bounded so loops stay tame
    "{v} = {a} * dnp.sin({v}) + {b} * x",
    "{v} = dnp.tanh({v} * {a}) + {b}",
    "{v} = {a} * {v} * (1.0 - {v} * {v} / 9.0) + {b}",
    "{v} = 0.5 * ({v} + {c} / {v})",
    "{v} = dnp.sqrt({v} * {v} + {c}) * {a}",
)


SMOOTH_AFTER_LOOPS = False


def build_flow(d: Any, kind: str = "grad", max_ops: int = 4,
               smooth_after: bool | None = None) -> Program:
    """A program with value-dependent control flow: ``if``/``else`` on a traced value,
    ``for`` loops, ``while`` loops whose trip count depends on x, Python ``max``/``abs``.
    Thresholds are kept MARGIN away from the compared values (checked by validate).

    ``smooth_after`` (default :data:`SMOOTH_AFTER_LOOPS`): no kinks or selections after
    the control construct. (A kink of a loop's result used to make the reference's
    lambdify print Heaviside of a large argument for minutes: bug B6, since fixed.)"""
    shape = d.choice(((), (2,), (3,), (2, 2)))
    x = draw_point(d, shape)
    b = Builder(d, x)
    for _ in range(d.integer(0, 2)):
        b.step()
    construct = d.choice(("if", "for", "while", "pymax", "recurse"))
    cur = b.pool[-1]
    n = b.count
    if construct == "for":
        body = _flow_body(b, d)
        k = d.integer(1, 4)
        v = f"v{n + 1}"
        b.lines += [f"{v} = {cur.name} * 1.0", f"for _ in range({k}):", "    " + body.format(v=v, **_coefs(d))]
    elif construct == "while":
        v = f"v{n + 1}"
        a = d.choice((1.5, 2.0, 1.25))
        t = d.choice((4.0, 9.0, 20.0))
        b.lines += [f"{v} = dnp.sum({cur.name} * {cur.name}) + 1.0",
                    "k = 0", f"while {v} < {t} and k < 8:", f"    {v} = {v} * {a} + 0.25 * dnp.sin({v})",
                    "    k += 1"]
    elif construct == "recurse":
        v = f"v{n + 1}"
        depth = d.integer(1, 3)
        b.lines += ["def g(u, depth):",
                    "    if depth == 0:", "        return u",
                    "    return g(dnp.sin(u) + 0.5 * u, depth - 1)",
                    f"{v} = g({cur.name}, {depth})"]
    elif construct == "pymax":
        v = f"v{n + 1}"
        s = b.pool[-1] if cur.shape == () else None
        if s is None:
            b.lines.append(f"s{n} = dnp.sum({cur.name})")
            sname = f"s{n}"
        else:
            sname = s.name
        c = d.choice((0.3, -0.7, 1.1))
        b.lines.append(f"{v} = max({sname}, {c}) + abs({sname} - {c}) * {cur.name}")
    else:  # if / else on a traced scalar
        v = f"v{n + 1}"
        test = f"dnp.sum({cur.name})" if cur.shape else cur.name
        t = d.choice((0.0, 0.5, -0.5, 1.0))
        arm1 = _flow_body(b, d).format(v=v, **_coefs(d))
        arm2 = _flow_body(b, d).format(v=v, **_coefs(d))
        cmp = d.choice((">", "<", ">=", "<="))
        b.lines += [f"{v} = {cur.name} + 0.0", f"if {test} {cmp} {t}:", f"    {arm1}", "else:", f"    {arm2}"]
    # evaluate to learn the new variable's value at x
    fn = Program("def f(x):\n" + textwrap.indent("\n".join(b.lines) + f"\nreturn {v}", "    "), x).function()
    try:
        with np.errstate(all="ignore"):
            val = np.asarray(fn(x), dtype=float)
    except Exception as exc:
        raise Rejected(f"flow program failed: {exc}") from None
    if not _ok(val):
        raise Rejected("flow value out of range")
    b.count += 1
    b.env[v] = fn(x)
    b.pool.append(Var(v, val))
    b.smooth = SMOOTH_AFTER_LOOPS if smooth_after is None else smooth_after
    for _ in range(d.integer(0, max_ops - 2)):
        b.step()
    return Program(b.finish(kind), x, kind, "flow")


def _flow_body(b: Builder, d: Any) -> str:
    return d.choice(FLOW_BODIES)


def _coefs(d: Any) -> dict[str, float]:
    return {"a": d.choice((0.5, 0.9, 1.1, -0.8)), "b": d.choice((0.25, -0.5, 1.0)),
            "c": d.choice((1.0, 2.0, 0.5))}


# ----------------------------------------------------------------------------- hypothesis


@st.composite
def programs(draw: Any, kind: str = "grad", max_ops: int = 6) -> Program:
    try:
        p = build_program(HypothesisDraw(draw), kind, max_ops)
    except Rejected:
        from hypothesis import reject
        reject()
    return _valid_or_reject(p)


@st.composite
def elementwise_programs(draw: Any, max_ops: int = 5) -> Program:
    try:
        p = build_elementwise(HypothesisDraw(draw), max_ops)
    except Rejected:
        from hypothesis import reject
        reject()
    return _valid_or_reject(p)


@st.composite
def flow_programs(draw: Any, kind: str = "grad") -> Program:
    try:
        p = build_flow(HypothesisDraw(draw), kind)
    except Rejected:
        from hypothesis import reject
        reject()
    return _valid_or_reject(p)


def _valid_or_reject(p: Program) -> Program:
    from hypothesis import assume

    assume(validate(p) is None)
    return p


def random_program(rng: random.Random, family: str, kind: str) -> Program:
    """The soak's twin of the strategies (raises Rejected or returns a *validated* program)."""
    d = RandomDraw(rng)
    if family == "elementwise":
        p = build_elementwise(d)
    elif family == "flow":
        p = build_flow(d, kind)
    else:
        p = build_program(d, kind)
    why = validate(p)
    if why:
        raise Rejected(why)
    return p


# ----------------------------------------------------------------------------- validation


class _Probe(Box):
    """A value followed through the program by :class:`ProbeTrace`."""

    __slots__ = ("value",)

    def __init__(self, trace: ProbeTrace, value: Any) -> None:
        self._interp, self.value = trace, value

    def _value(self) -> Any:
        return self.value

    def _cmp(self, other: Any, op: Callable) -> Any:
        a, b = np.asarray(primal(self), float), np.asarray(primal(other), float)
        if a.size and b.size and float(np.min(np.abs(a - b))) < MARGIN:
            self._interp.fail(f"comparison within {MARGIN} of its threshold "
                             f"({np.min(np.abs(a - b)):.3g})")
        return op(primal(self), primal(other))

    def __lt__(self, o: Any) -> Any:
        return self._cmp(o, lambda a, b: a < b)

    def __le__(self, o: Any) -> Any:
        return self._cmp(o, lambda a, b: a <= b)

    def __gt__(self, o: Any) -> Any:
        return self._cmp(o, lambda a, b: a > b)

    def __ge__(self, o: Any) -> Any:
        return self._cmp(o, lambda a, b: a >= b)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._cmp(o, lambda a, b: a == b)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._cmp(o, lambda a, b: a != b)

    __hash__ = object.__hash__


class ProbeTrace(Interpreter):
    """Runs a program on plain numpy, checking every primitive against its domain margins."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.problems: list[str] = []
        self.used: Counter[str] = Counter()

    def fail(self, why: str) -> None:
        self.problems.append(why)

    def process(self, prim: Any, args: Any, params: dict) -> Any:
        vals = [a.value if type(a) is _Probe and a._interp is self else a for a in args]
        traced = [type(a) is _Probe and a._interp is self for a in args]
        self.used[prim.name] += 1
        with np.errstate(all="ignore"):
            out = prim.impl(*vals, **params)
        why = domain_problem(prim.name, vals, traced, params)
        if why:
            self.fail(f"{prim.name}: {why}")
        o = np.asarray(out, dtype=float)
        if not np.all(np.isfinite(o)):
            self.fail(f"{prim.name}: non-finite value")
        elif o.size and float(np.max(np.abs(o))) > 1e6:
            self.fail(f"{prim.name}: value {np.max(np.abs(o)):.3g} too large")
        return _Probe(self, out)


def domain_problem(name: str, vals: list[Any], traced: list[bool], params: dict) -> str | None:
    """Why the arguments of primitive ``name`` are too close to a kink, pole or edge."""
    a = np.asarray(vals[0], dtype=float)
    small = lambda v: v.size and float(np.min(v)) < MARGIN  # noqa: E731
    if name in ("log", "sqrt") and small(a):
        return f"argument {a.min():.3g} < {MARGIN}"
    if name == "log1p" and small(a + 1):
        return "argument near -1"
    if name in ("arcsin", "arccos") and small(1 - np.abs(a)):
        return "argument near +-1"
    if name == "tan" and a.size and float(np.min(np.abs(np.cos(a)))) < 0.2:
        return "argument near a pole"
    if name in ("abs", "sign") and small(np.abs(a)):
        return "argument near the kink at 0"
    if name == "div" and small(np.abs(np.asarray(vals[1], dtype=float))):
        return "divisor near 0"
    if name == "power":
        e = np.asarray(vals[1], dtype=float)
        if traced[1] and small(a):
            return "traced exponent with base near or below 0"
        if not traced[1]:
            integer = bool(np.all(e == np.round(e)))
            if not integer and small(a):
                return "fractional power of a base near or below 0"
            if integer and np.any(e < 0) and small(np.abs(a)):
                return "negative power of a base near 0"
    if name in ("maximum", "minimum") and small(np.abs(a - np.asarray(vals[1], dtype=float))):
        return "near a tie"
    if name in ("max", "min") and not _gap_ok(a, params["axis"], MARGIN):
        return "near a tie"
    return None


def validate(program: Program) -> str | None:
    """None when the program is fit for the differential oracle, else the reason."""
    try:
        f = program.function()
    except Exception as exc:  # noqa: BLE001
        return f"does not compile: {exc}"
    x = program.point()
    try:
        with new_level(ProbeTrace) as trace:
            y = f(_Probe(trace, x))
            out = np.asarray(primal(y), dtype=float)
    except Exception as exc:  # noqa: BLE001
        return f"raises {type(exc).__name__}: {exc}"
    if trace.problems:
        return trace.problems[0]
    if program.kind in ("grad", "hessian") and out.shape != ():
        return "not scalar"
    if program.kind == "derivative" and out.shape != np.shape(x):
        return "not elementwise"
    if not np.all(np.isfinite(out)):
        return "non-finite output"
    return None


def primitives_used(program: Program) -> Counter[str]:
    """The primitives a program calls on traced values (forward pass only)."""
    f = program.function()
    with new_level(ProbeTrace) as trace:
        f(_Probe(trace, program.point()))
    return trace.used


# ----------------------------------------------------------------------------- noise


class _Noisy(Box):
    __slots__ = ("value",)

    def __init__(self, trace: NoiseTrace, value: Any) -> None:
        self._interp, self.value = trace, value

    def _value(self) -> Any:
        return self.value


EXACT_PRIMITIVES = {"neg", "reshape", "transpose", "broadcast_to", "getitem", "concatenate",
                    "where", "abs", "sign", "maximum", "minimum", "max", "min"}
SUMMING_PRIMITIVES = {"sum": lambda x, **p: np.sum(np.abs(x), axis=p["axis"], keepdims=p["keepdims"]),
                      "matmul": lambda a, b: np.abs(a) @ np.abs(b),
                      "scatter_add": lambda v, idx, shape: _abs_scatter(v, idx, shape)}


def _abs_scatter(v: Any, idx: Any, shape: Any) -> np.ndarray:
    from diffkit.primitives.structure import _scatter_add
    return _scatter_add(np.abs(v), idx=idx, shape=shape)


class NoiseTrace(Interpreter):
    """Monte Carlo arithmetic: every rounding primitive's result gets a relative error of up
    to eps (sums and matrix products: eps times the sum of absolute terms)."""

    def __init__(self, level: int, rng: np.random.Generator) -> None:
        super().__init__(level)
        self.rng = rng

    def process(self, prim: Any, args: Any, params: dict) -> Any:
        vals = [a.value if type(a) is _Noisy and a._interp is self else a for a in args]
        if any(isinstance(v, Box) for v in vals):
            return _Noisy(self, bind(prim, *vals, **params))
        with np.errstate(all="ignore"):
            out = prim.impl(*vals, **params)
            if prim.name not in EXACT_PRIMITIVES:
                o = np.asarray(out, dtype=float)
                u = self.rng.uniform(-EPS, EPS, size=o.shape)
                if prim.name in SUMMING_PRIMITIVES:
                    o = o + u * SUMMING_PRIMITIVES[prim.name](*vals, **params)
                else:
                    o = o * (1.0 + u)
                out = o[()] if o.ndim == 0 else o
        return _Noisy(self, out)


def noisy(compute: Callable[[Any], Any], x: Any, samples: int = 3, seed: int = 0) -> list[np.ndarray]:
    """``compute(x)`` rerun ``samples`` times with Monte Carlo arithmetic underneath."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples):
        with new_level(lambda level: NoiseTrace(level, rng)) as trace:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(np.asarray(primal(compute(_Noisy(trace, x))), dtype=float))
    return out


def spread(results: list[np.ndarray], base: np.ndarray) -> float:
    return max(float(np.max(np.abs(r - base))) if r.size else 0.0 for r in results)


# ----------------------------------------------------------------------------- oracle


def derivative_fn(kind: str, f: Callable, backend: Any) -> Callable[[Any], Any]:
    """The transform that computes ``kind`` of ``f`` with ``backend`` (None: default)."""
    if kind == "grad":
        return dk.grad(f, backend=backend)
    if kind == "jacobian":
        return dk.jacobian(f, backend=backend)
    if kind == "derivative":
        return dk.derivative(f, backend=backend)
    if kind == "hessian":
        return dk.hessian(f, backend=backend)
    raise ValueError(kind)


def _backend_call(kind: str, f: Callable, name: str | None) -> Callable[[Any], Any]:
    """Like :func:`derivative_fn`, but through the backend objects, so the input may be a
    box of an outer level (the noise trace)."""
    from diffkit.backends import as_backend

    if kind == "hessian" and name is None:
        fwd, rev = as_backend("forward"), as_backend("reverse")
        return lambda z: fwd.jacobian(lambda w: rev.value_and_grad(f, w, False)[2], z)
    be = as_backend(name)
    if kind == "grad":
        return lambda z: be.value_and_grad(f, z, False)[2]
    return lambda z: getattr(be, kind)(f, z)


@dataclass
class Verdict:
    backend: str
    kind: str
    status: str          # agree | disagree | error | n/a | skipped
    error: float = float("nan")    # relative max-norm error (absolute when ref == 0)
    tol: float = float("nan")      # the absolute tolerance applied to max|d - ref|
    message: str = ""

    @property
    def bad(self) -> bool:
        return self.status in ("disagree", "error", "timeout")

    def __str__(self) -> str:
        return (f"{self.backend:>20} {self.kind:<10} {self.status:<9} err={self.error:.2e} "
                f"tol/scale={self.tol:.2e} {self.message}")


@dataclass
class Judgement:
    program: Program
    verdicts: list[Verdict] = field(default_factory=list)
    reference_method: str = ""
    kappa: float = float("nan")   # sigma / (eps * max|ref|): the measured condition

    @property
    def bad(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.bad]

    def report(self) -> str:
        head = f"reference: {self.reference_method}; condition estimate {self.kappa:.3g}"
        return "\n".join([self.program.pretty(), head] + [str(v) for v in self.verdicts])


def _label(name: Any, kind: str) -> str:
    if name is None:
        return "forward-over-reverse"
    return name if isinstance(name, str) else f"{type(name).__name__}"


def _numeric_model(f: Callable, x: np.ndarray, kind: str) -> float:
    """Central differences' expected error (truncation + round-off), estimated without the
    backend under test: |D(2h) - D(h)| / 3 plus 2 eps_f / h, max over entries."""
    x = np.asarray(x, dtype=float)
    flat = x.ravel()
    h = 2.0 ** np.floor(np.log2(EPS ** (1 / 3) * np.maximum(np.abs(flat), 1.0)))
    h = (flat + h) - flat
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fx = np.asarray(f(x), dtype=float)
        eps_f = max(spread(noisy(f, x, samples=3, seed=1), fx), 4 * EPS * float(np.max(np.abs(fx))))

        def shifted(i_or_all: Any, t: float) -> np.ndarray:
            z = flat.copy()
            if i_or_all is None:
                z = z + t * h
            else:
                z[i_or_all] += t * h[i_or_all]
            return np.asarray(f(z.reshape(x.shape) if x.ndim else z[0]), dtype=float)

        worst = 0.0
        entries = [None] if kind == "derivative" else range(flat.size)
        for i in entries:
            d1 = (shifted(i, 1) - shifted(i, -1)) / 2
            d2 = (shifted(i, 2) - shifted(i, -2)) / 4
            hi = h if i is None else h[i]
            trunc = np.abs(d2 - d1) / (3 * hi)
            if kind == "derivative":
                trunc = trunc.reshape(x.shape)
            worst = max(worst, float(np.max(trunc + 2 * eps_f / np.min(hi))))
    return worst


SYMPY_MEMORY_MB = 4096.0


def _sympy_step(job: Callable[[], dict], isolate: float | None) -> dict:
    """Run a sympy-heavy step (reference, symbolic backend) in-process or, with ``isolate``
    seconds, in a forked cell under that time limit (sympy's printers can take minutes on
    Max/Heaviside-heavy derivatives: known issue B6)."""
    if isolate is None:
        try:
            return {"status": "ok", **job()}
        except Exception as exc:  # noqa: BLE001
            return {"status": "error", "exc": exc, "message": f"{type(exc).__name__}: {exc}"[:300]}
    from diffkit.bench.cells import run_isolated

    return run_isolated(job, timeout=isolate, memory_mb=SYMPY_MEMORY_MB)


def judge(program: Program, backends: Sequence[Any] | None = None, sigma_samples: int = 3,
          isolate: float | None = None) -> Judgement:
    """Every backend on ``program`` against the high-precision reference.

    ``isolate``: run the reference and the symbolic backend in forked cells with this many
    seconds each (a timeout is then a verdict, not a hung test)."""
    from diffkit.core import DiffkitError, NotApplicable
    from diffkit.bench.reference import reference

    kind = program.kind
    if backends is None:
        backends = HESSIAN_BACKENDS if kind == "hessian" else BACKENDS
    f = program.function()
    x = program.point()
    out = Judgement(program)

    def ref_job() -> dict:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = reference(f, x, kind)
        return {"method": ref.method, "derivative": np.asarray(ref.derivative, dtype=float).tolist()}

    got = _sympy_step(ref_job, isolate)
    if got["status"] != "ok":
        status = "timeout" if got["status"] == "timeout" else "error"
        out.verdicts.append(Verdict("reference", kind, status, message=str(got.get("message"))[:300]))
        return out
    out.reference_method = got["method"]
    r = np.asarray(got["derivative"], dtype=float)
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    if not np.all(np.isfinite(r)):
        out.verdicts.append(Verdict("reference", kind, "error", message="non-finite reference"))
        return out

    sigmas: dict[str, float] = {}
    for name in backends:
        if name in ("forward", "reverse", None):
            try:
                base = np.asarray(_backend_call(kind, f, name)(x), dtype=float)
                sigmas[_label(name, kind)] = spread(
                    noisy(_backend_call(kind, f, name), x, sigma_samples), base)
            except Exception:  # noqa: BLE001  (the backend's own run reports it)
                pass
    sigma_ad = max(sigmas.values(), default=0.0)
    out.kappa = sigma_ad / (EPS * scale) if scale else float("nan")
    if sigma_ad > ILL_CONDITIONED * max(scale, 1e-300):
        out.verdicts.append(Verdict("all", kind, "skipped", message=f"ill-conditioned: sigma "
                                    f"{sigma_ad:.2e} vs max|ref| {scale:.2e}"))
        return out

    for name in backends:
        label = _label(name, kind)

        def run(name: Any = name) -> dict:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return {"d": np.asarray(derivative_fn(kind, f, name)(x), dtype=float)}

        try:
            if name == "symbolic" and isolate is not None:
                got = _sympy_step(run, isolate)
                if got["status"] == "timeout":
                    out.verdicts.append(Verdict(label, kind, "timeout", message=got["message"]))
                    continue
                if got["status"] != "ok":
                    msg = got["message"]
                    if got["status"] == "n/a" or msg.startswith("DiffkitError"):
                        raise DiffkitError(msg.split(": ", 1)[-1])
                    raise RuntimeError(msg)
                d = got["d"]
            else:
                d = run()["d"]
        except DiffkitError as exc:
            # no closed form (symbolic) or no static graph (compiled: a branch on a value)
            closed = "closed form" in str(exc) and name == "symbolic"
            static = isinstance(exc, NotApplicable) and name == "compiled"
            status = "n/a" if (closed or static) and program.family == "flow" else "error"
            out.verdicts.append(Verdict(label, kind, status, message=str(exc)[:200]))
            continue
        except Exception as exc:  # noqa: BLE001
            out.verdicts.append(Verdict(label, kind, "error", message=f"{type(exc).__name__}: {exc}"[:300]))
            continue
        if d.shape != r.shape:
            out.verdicts.append(Verdict(label, kind, "disagree", message=f"shape {d.shape} != {r.shape}"))
            continue
        err = float(np.max(np.abs(d - r))) if r.size else 0.0
        if name == "numeric":
            tol = NUMERIC_RTOL * scale + NUMERIC_SAFETY * _numeric_model(f, x, kind) + ABS_FLOOR
        elif name == "symbolic":
            tol = SYMBOLIC_RTOL * scale + SIGMA_FACTOR * sigma_ad + ABS_FLOOR
        else:
            tol = AD_RTOL * scale + SIGMA_FACTOR * sigmas.get(label, sigma_ad) + ABS_FLOOR
        ok = bool(np.all(np.isfinite(d))) and err <= tol
        rel = err / scale if scale else err
        out.verdicts.append(Verdict(label, kind, "agree" if ok else "disagree", rel,
                                    tol / scale if scale else tol,
                                    "" if ok else f"max|d-ref|={err:.3e} > tol={tol:.3e}"))
    return out


# ----------------------------------------------------------------------------- shrinking


def shrink(program: Program, still_bad: Callable[[Program], bool], budget: int = 200) -> Program:
    """Greedy minimisation of a failing program for the soak (hypothesis does this in tests):
    drop statements, replace a variable by the input or by an earlier variable of the same
    shape, simplify the point; keep a change when the program stays valid and still fails."""
    best = program
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for cand in _candidates(best):
            tries += 1
            if tries > budget:
                break
            if validate(cand) is None and still_bad(cand):
                best, changed = cand, True
                break
    return best


def _candidates(p: Program) -> list[Program]:
    import re

    lines = p.source.splitlines()
    head, body = lines[0], lines[1:]

    def program(new_body: list[str], x: Any = None) -> Program:
        return Program("\n".join([head] + new_body) + "\n", p.x if x is None else x, p.kind, p.family)

    out = []
    assigns = [i for i, ln in enumerate(body) if re.match(r"    v\d+ = ", ln)]
    names = {i: body[i].split(" = ", 1)[0].strip() for i in assigns}
    # 1. dead statements (their variable is never read again)
    for i in assigns:
        rest = "\n".join(body[i + 1:])
        if not re.search(rf"\b{names[i]}\b", rest):
            out.append(program(body[:i] + body[i + 1:]))
    # 2. bypass: a statement becomes one of the variables it reads (or x), or a plain copy
    for i in reversed(assigns):
        expr = body[i].split(" = ", 1)[1]
        reads = [v for v in dict.fromkeys(re.findall(r"\b(v\d+|x)\b", expr))]
        for v in reads + ["x"]:
            if expr.strip() != v:
                out.append(program(body[:i] + [f"    {names[i]} = {v}"] + body[i + 1:]))
    # 3. simpler points
    x = np.asarray(p.x, dtype=float)
    for rounded in (np.round(x, 1), np.round(x, 2), np.round(x, 4)):
        if not np.array_equal(rounded, x):
            out.append(program(body, rounded[()] if rounded.ndim == 0 else rounded))
    return out


# ----------------------------------------------------------------------------- nesting


NESTINGS = (("forward", "forward"), ("forward", "reverse"), ("reverse", "forward"),
            ("reverse", "reverse"), ("compiled", "compiled"), ("forward", "compiled"))


def judge_nested(program: Program, weights_seed: int = 0, isolate: float | None = None) -> Judgement:
    """Nested gradients ``grad(z -> sum(grad(f)(z) * w))`` = ``H w`` for every pairing of
    forward and reverse mode (outer, inner), compiled over compiled and forward over
    compiled, against the reference Hessian times ``w``."""
    from diffkit.bench.reference import reference

    f = program.function()
    x = program.point()
    w = np.random.default_rng(weights_seed).uniform(-1, 1, size=np.shape(x))
    out = Judgement(program)

    def ref_job() -> dict:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = reference(f, x, "hessian")
        return {"method": ref.method, "derivative": np.asarray(ref.derivative, dtype=float).tolist()}

    got = _sympy_step(ref_job, isolate)
    if got["status"] != "ok":
        status = "timeout" if got["status"] == "timeout" else "error"
        out.verdicts.append(Verdict("reference", "hvp", status, message=str(got.get("message"))[:300]))
        return out
    out.reference_method = got["method"]
    H = np.asarray(got["derivative"], dtype=float)
    n = int(np.prod(np.shape(x), dtype=int))
    r = (H.reshape(n, n) @ np.ravel(w)).reshape(np.shape(x))
    scale = float(np.max(np.abs(r)))
    for outer, inner in NESTINGS:
        label = f"{outer}-over-{inner}"

        def hv(z: Any, outer: str = outer, inner: str = inner) -> Any:
            from diffkit.backends import as_backend
            o, i = as_backend(outer), as_backend(inner)
            return o.value_and_grad(lambda u: dnp.sum(i.value_and_grad(f, u, False)[2] * w), z, False)[2]

        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = np.asarray(dk.grad(lambda z: dnp.sum(dk.grad(f, backend=inner)(z) * w),
                                       backend=outer)(x), dtype=float)
                sigma = spread(noisy(hv, x), np.asarray(hv(x), dtype=float))
        except Exception as exc:  # noqa: BLE001
            out.verdicts.append(Verdict(label, "hvp", "error", message=f"{type(exc).__name__}: {exc}"[:300]))
            continue
        err = float(np.max(np.abs(d - r))) if r.size else 0.0
        tol = AD_RTOL * scale + SIGMA_FACTOR * sigma + ABS_FLOOR
        ok = d.shape == r.shape and bool(np.all(np.isfinite(d))) and err <= tol
        out.verdicts.append(Verdict(label, "hvp", "agree" if ok else "disagree",
                                    err / scale if scale else err, tol / scale if scale else tol,
                                    "" if ok else f"max|d-ref|={err:.3e} > tol={tol:.3e}"))
    return out


# ----------------------------------------------------------------------------- coverage


class CountTrace(Interpreter):
    """Counts every primitive call beneath it (the AD rules' own calls included)."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.used: Counter[str] = Counter()

    def process(self, prim: Any, args: Any, params: dict) -> Any:
        self.used[prim.name] += 1
        vals = [a.value if type(a) is _Noisy and a._interp is self else a for a in args]
        if any(isinstance(v, Box) for v in vals):
            return _Noisy(self, bind(prim, *vals, **params))  # type: ignore[arg-type]
        with np.errstate(all="ignore"):
            return _Noisy(self, prim.impl(*vals, **params))  # type: ignore[arg-type]


def dead_statements(program: Program) -> list[str]:
    """Names assigned in the program and never read afterwards: its dead statements.

    >>> dead_statements(Program("def f(x):\\n    v1 = x * 2\\n    v2 = x + 1\\n    return v2\\n", 1.0))
    ['v1']
    """
    tree = ast.parse(program.source)
    stores = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted({name for name in stores if name not in loads and name != "_"})


def exercised(program: Program) -> Counter[str]:
    """Primitives reached by the program's forward pass and by forward, reverse and
    forward-over-reverse differentiation of it (scatter_add, for one, only appears in the
    reverse pass of indexing)."""
    f = program.function()
    kind = "hessian" if program.kind in ("grad", "hessian") else program.kind
    total: Counter[str] = Counter()
    for name in (None, "forward", "reverse") if kind == "hessian" else ("forward", "reverse"):
        with new_level(CountTrace) as trace:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _backend_call(kind, f, name)(_Noisy(trace, program.point()))  # type: ignore[arg-type]
        total += trace.used
    return total


# ----------------------------------------------------------------------------- formulas (parser fuzz)

import ast as _ast  # noqa: E402

from diffkit.bench.formula import ALIASES, ARITY  # noqa: E402

FORMULA_VARS = ("x", "y", "z1", "alpha", "x10", "open", "exec", "pi", "e")  # bare names are variables
FORMULA_FUNCS = tuple(ARITY) + tuple(ALIASES)
_ALLOWED_BIN = (_ast.Add, _ast.Sub, _ast.Mult, _ast.Div, _ast.Pow, _ast.BitXor)  # ^ means power
_FORBIDDEN_BIN = (_ast.Mod, _ast.FloorDiv, _ast.MatMult, _ast.LShift, _ast.RShift, _ast.BitOr, _ast.BitAnd)


def _arity(name: str) -> int:
    return ARITY[ALIASES.get(name, name)]


def _leaf(d: Any) -> tuple[_ast.expr, bool]:
    kind = d.integer(0, 9)
    if kind <= 2:
        return _ast.Constant(d.choice((0, 1, 2, 10, 123456789, 2**70))), False
    if kind <= 4:
        return _ast.Constant(d.choice((0.5, 1e-3, 2.5e10, 1e300, 3.0))), False
    if kind <= 7:
        return _ast.Name(d.choice(FORMULA_VARS)), False
    bad = d.choice((_ast.Constant("s"), _ast.Constant(b"b"), _ast.Constant(2j), _ast.Constant(None),
                    _ast.Constant(True), _ast.Constant(...), _ast.Name("_secret"), _ast.Name("__import__"),
                    _ast.Name("θ"), _ast.Name(d.choice(FORMULA_FUNCS))))
    return bad, True


def formula_tree(d: Any, depth: int = 4) -> tuple[_ast.expr, bool]:
    """A random expression AST from a grammar that includes forbidden constructs, and
    whether it contains one (the parser must refuse exactly those)."""
    if depth == 0 or d.coin(0.25):
        return _leaf(d)
    sub = lambda: formula_tree(d, depth - 1)  # noqa: E731
    kind = d.integer(0, 19)
    if kind <= 4:
        (a, ba), (b, bb) = sub(), sub()
        if d.coin(0.85):
            return _ast.BinOp(a, d.choice(_ALLOWED_BIN)(), b), ba or bb
        return _ast.BinOp(a, d.choice(_FORBIDDEN_BIN)(), b), True
    if kind <= 6:
        a, ba = sub()
        if d.coin(0.8):
            return _ast.UnaryOp(d.choice((_ast.USub, _ast.UAdd))(), a), ba
        return _ast.UnaryOp(d.choice((_ast.Not, _ast.Invert))(), a), True
    if kind <= 10:  # calls: good, wrong arity, unknown name, keywords, starred
        name = d.choice(FORMULA_FUNCS)
        n = _arity(name)
        args = [sub() for _ in range(n)]
        bad = any(b for _, b in args)
        style = d.integer(0, 9)
        keywords: list[_ast.keyword] = []
        if style == 7:
            args.append(sub())
            bad = True
        elif style == 8:
            name, bad = d.choice(("open", "eval", "exec", "getattr", "breakpoint", "foo", "__import__")), True
        elif style == 9:
            if d.coin(0.5):
                keywords, bad = [_ast.keyword("k", _ast.Constant(1))], True
            else:
                args[0], bad = (_ast.Starred(args[0][0], _ast.Load()), True), True
        return _ast.Call(_ast.Name(name), [a for a, _ in args], keywords), bad
    a, _ = sub()
    forbidden = [
        lambda: _ast.Attribute(a, d.choice(("__class__", "real", "__globals__", "system"))),
        lambda: _ast.Subscript(a, _ast.Constant(0)),
        lambda: _ast.Subscript(a, _ast.Slice(_ast.Constant(1), None, None)),
        lambda: _ast.Lambda(_ast.arguments([], [], None, [], [], None, []), a),
        lambda: _ast.IfExp(a, a, a),
        lambda: _ast.Compare(a, [_ast.Lt()], [a]),
        lambda: _ast.BoolOp(_ast.And(), [a, a]),
        lambda: _ast.ListComp(a, [_ast.comprehension(_ast.Name("i"), _ast.Name("y"), [], 0)]),
        lambda: _ast.GeneratorExp(a, [_ast.comprehension(_ast.Name("i"), _ast.Name("y"), [], 0)]),
        lambda: _ast.List([a], _ast.Load()),
        lambda: _ast.Tuple([a, a], _ast.Load()),
        lambda: _ast.Set([a]),
        lambda: _ast.Dict([_ast.Constant(1)], [a]),
        lambda: _ast.NamedExpr(_ast.Name("w"), a),
        lambda: _ast.JoinedStr([_ast.FormattedValue(a, -1, None)]),
        lambda: _ast.Call(_ast.Attribute(_ast.Name("x"), "pwn"), [a], []),
        lambda: _ast.Call(_ast.Call(_ast.Name("sin"), [a], []), [a], []),
        lambda: _ast.Await(a),
        lambda: _ast.Yield(a),
    ]
    return d.choice(forbidden)(), True


@st.composite
def formula_asts(draw: Any) -> tuple[str, bool]:
    """``(text, forbidden)``: ``ast.unparse`` of a random tree and whether it holds a
    forbidden construct."""
    tree, bad = formula_tree(HypothesisDraw(draw))
    tree = _ast.fix_missing_locations(tree)
    return _ast.unparse(tree), bad


HOSTILE_TOKENS = (
    "x", "y", "1", "2.5", "1e308", "9", "^", "**", "+", "-", "*", "/", "(", ")", ",", " ", "\t", "\n",
    "sin", "log", "maximum", "exp", "__import__", "('os')", ".system", "('rm -rf /')", "__class__",
    "__bases__", "[0]", "__subclasses__()", "__globals__", "__builtins__", "open", "eval", "exec",
    "compile", "getattr", "lambda", ":", "if", "else", "for", "in", "not", "and", "or", ":=", "yield",
    "await", "async", "import", "os", "sys", "f'", "{x}", "'", '"', "\\", "#", ";", "@", "%", "//",
    "<<", "~", "|", "&", "!", "$", "?", "`", "\x00", "é", "𝑥", "\u202e", "0x1F", "1j", "None", "True",
    "...", "*", "**kw", "=",
)


@st.composite
def hostile_texts(draw: Any) -> str:
    """Text made of fragments of code injections, Python syntax and formula syntax."""
    return "".join(draw(st.lists(st.sampled_from(HOSTILE_TOKENS), max_size=30)))
