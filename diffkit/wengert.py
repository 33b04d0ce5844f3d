"""Evaluation traces (Wengert lists): automatic differentiation written out by hand.

``trace(f, *args)`` runs ``f`` once and lists every primitive it applied, in the
notation of the AD literature: the inputs are v₋ₙ₊₁ … v₀, each operation defines the
next vᵢ from earlier ones. Then:

* ``mode="forward"``: each row also carries its tangent v̇ᵢ for a seed direction
  (by default d/d of the first input), computed row by row with the JVP rules, exactly
  as forward mode does in one sweep;
* ``mode="reverse"``: after the forward sweep, the reverse sweep runs the VJP rules from
  the output back, one row per contribution ``v̄ⱼ += …``, in the order the backward pass
  computes them, so a variable used twice visibly receives two contributions.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> t = dk.trace(lambda x1, x2: dnp.log(x1) + x1 * x2 - dnp.sin(x2), 2.0, 5.0)
>>> [r["op"] for r in t.rows]
['input', 'input', 'log', 'mul', 'add', 'sin', 'sub']
>>> float(t.rows[-1]["tangent"])   # ∂f/∂x1 at (2, 5) = 1/2 + 5
5.5
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .core import Box, Primitive, Interpreter, bind, new_level, shape
from .primitives import sum_to


class _Var(Box):
    """A traced value that knows its row."""

    __slots__ = ("value", "index")

    def __init__(self, trace: _Recorder, value: Any, index: int) -> None:
        self._interp, self.value, self.index = trace, value, index

    def _value(self) -> Any:
        return self.value


class _Recorder(Interpreter):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.ops: list[tuple[Primitive, list[Any], dict, Any]] = []

    def process(self, prim: Primitive, args: Any, params: dict) -> Any:
        ins = [a if type(a) is _Var and a._interp is self else a for a in args]
        values = [a.value if type(a) is _Var and a._interp is self else a for a in args]
        out = bind(prim, *values, **params)
        self.ops.append((prim, ins, params, out))
        return _Var(self, out, len(self.ops) - 1)


def _fmt(v: Any) -> str:
    a = np.asarray(v)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return np.array2string(a, precision=4, threshold=6, separator=", ")


@dataclass
class EvaluationTrace:
    """The rows of a forward or reverse evaluation trace (see the module docstring)."""

    mode: str
    rows: list[dict[str, Any]]
    adjoint_rows: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        cols = ["var", "op", "inputs", "value", "tangent" if self.mode == "forward" else "adjoint"]
        parts = [_text_table(cols, [[_cell(r.get(c)) for c in cols] for r in self.rows])]
        if self.adjoint_rows:
            cols2 = ["step", "update", "rule", "contribution", "total"]
            parts.append("reverse sweep (adjoints, in the order the backward pass computes them)")
            parts.append(_text_table(cols2, [[_cell(r.get(c)) for c in cols2]
                                             for r in self.adjoint_rows]))
        return "\n".join(parts)

    def records(self) -> list[dict[str, Any]]:
        """Rows as plain data (values as floats or lists)."""
        def as_data(r: dict) -> dict:
            return {k: (np.asarray(v).tolist() if isinstance(v, (np.ndarray, np.generic)) else v)
                    for k, v in r.items()}
        return [as_data(r) for r in self.rows + self.adjoint_rows]

    def _repr_html_(self) -> str:
        cols = list(self.rows[0])
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in cols)
                       + "</tr>" for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"


def _bar(var: str) -> str:
    """``v3`` -> ``v̄3``: the adjoint's name."""
    return var[0] + "\u0304" + var[1:]


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else _fmt(v)


def _text_table(cols: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)),
             "  ".join("-" * w for w in widths)]
    return "\n".join(lines + ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows])


def trace(f: Callable[..., Any], *args: Any, mode: str = "forward", seed: Any = None
          ) -> EvaluationTrace:
    """The evaluation trace of ``f`` at ``args`` (see the module docstring).

    ``seed``: the tangent of each input in forward mode (a tuple, one per argument);
    by default 1 for the first argument's first entry and 0 elsewhere.
    """
    if mode not in ("forward", "reverse"):
        raise ValueError(f"mode must be 'forward' or 'reverse', got {mode!r}")
    xs = [np.asarray(a, dtype=float) for a in args]
    xs = [x[()] if x.ndim == 0 else x for x in xs]
    n = len(xs)
    name = {}  # row index -> v-name; inputs are v_{1-n} .. v_0
    with new_level(_Recorder) as rec:
        inputs = [_Var(rec, x, -n + k) for k, x in enumerate(xs)]
        out = f(*inputs)
    for k in range(n):
        name[-n + k] = f"v{1 - n + k}"
    for i in range(len(rec.ops)):
        name[i] = f"v{i + 1}"

    def ref(a: Any) -> str:
        return name[a.index] if type(a) is _Var else _fmt(a)

    def val(a: Any) -> Any:
        return a.value if type(a) is _Var else a

    rows = [{"var": name[-n + k], "op": "input", "inputs": "", "value": x} for k, x in enumerate(xs)]
    rows += [{"var": name[i], "op": prim.name, "inputs": ", ".join(ref(a) for a in ins),
              "value": y} for i, (prim, ins, params, y) in enumerate(rec.ops)]
    if mode == "forward":
        seeds = seed if seed is not None else [
            np.eye(1, np.size(x)).reshape(shape(x))[()] if k == 0 else np.zeros(shape(x))
            for k, x in enumerate(xs)]
        dots = {-n + k: np.asarray(s, dtype=float) for k, s in enumerate(seeds)}
        for k in range(n):
            rows[k]["tangent"] = dots[-n + k]
        for i, (prim, ins, params, y) in enumerate(rec.ops):
            y_dot = 0.0
            for j, a in enumerate(ins):
                if type(a) is _Var:
                    y_dot = y_dot + prim.jvp[j](dots[a.index], y, *map(val, ins), **params)
            dots[i] = np.broadcast_to(y_dot, shape(y)) + 0.0
            rows[n + i]["tangent"] = dots[i]
        return EvaluationTrace(mode, rows)
    # reverse sweep
    bars: dict[int, Any] = {}
    steps = []
    if type(out) is _Var:
        bars[out.index] = np.ones_like(out.value)
    for i in range(len(rec.ops) - 1, -1, -1):
        prim, ins, params, y = rec.ops[i]
        if i not in bars:
            continue
        for j, a in enumerate(ins):
            if type(a) is not _Var:
                continue
            c = prim.vjp[j](bars[i], y, *map(val, ins), **params)
            if shape(c) != shape(a.value):
                c = sum_to(c, shape(a.value))
            before = bars.get(a.index)
            bars[a.index] = c if before is None else before + c
            steps.append({"step": str(len(steps) + 1), "update": f"{_bar(name[a.index])} += "
                          f"∂{name[i]}/∂{name[a.index]} · {_bar(name[i])}", "rule": prim.name,
                          "contribution": c, "total": bars[a.index]})
    for r, idx in zip(rows, list(range(-n, 0)) + list(range(len(rec.ops)))):
        r["adjoint"] = bars.get(idx, 0.0)
    return EvaluationTrace(mode, rows, steps)
