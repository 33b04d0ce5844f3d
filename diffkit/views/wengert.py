"""Evaluation traces (Wengert lists): automatic differentiation written out by hand.

``trace(f, *args)`` runs ``f`` once and lists every primitive it applied, in the
notation of the AD literature: the inputs are v₋ₙ₊₁ … v₀, each operation defines the
next vᵢ from earlier ones. Then:

* ``mode="forward"``: each row also carries its tangent v̇ᵢ for a seed direction
  (by default the derivative with respect to the first input), as the forward-mode
  interpreter computes it, row by row;
* ``mode="reverse"``: the rows are the reverse-mode tape; then the backward sweep runs
  the VJP rules from the output back, one row per contribution ``v̄ⱼ += …``, in the order
  the sweep computes them, so a variable used twice visibly receives two contributions.

Both are recorded through the interpreters themselves (not a copy of them).

>>> import diffkit as dk, diffkit.numpy as dnp
>>> t = dk.trace(lambda x1, x2: dnp.log(x1) + x1 * x2 - dnp.sin(x2), 2.0, 5.0)
>>> [r["op"] for r in t.rows]
['input', 'input', 'log', 'mul', 'add', 'sin', 'sub']
>>> float(t.rows[-1]["tangent"])   # ∂f/∂x1 at (2, 5) = 1/2 + 5
5.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..interpreters.forward import Dual, ForwardInterpreter
from ..interpreters.tape import Node, ReverseInterpreter, backprop
from ..interpreters.tensor import Tensor
from .tables import html_table
from ..core import new_level, primal, shape


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
        parts = [_html_table(self.rows)]
        if self.adjoint_rows:
            parts += ["<p>reverse sweep (adjoints, in the order the backward pass computes "
                      "them)</p>", _html_table(self.adjoint_rows)]
        return "".join(parts)


def _html_table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    return html_table(cols, [[_cell(r.get(c)) for c in cols] for r in rows])


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
    if mode == "forward":
        seeds = seed if seed is not None else [
            np.eye(1, np.size(x)).reshape(shape(x))[()] if k == 0 else np.zeros(shape(x))
            for k, x in enumerate(xs)]
        return EvaluationTrace(mode, _forward_rows(f, xs, seeds))
    return EvaluationTrace(mode, *_reverse_rows(f, xs))


def _forward_rows(f: Callable[..., Any], xs: list[Any], seeds: list[Any]) -> list[dict]:
    """One row per value, with its tangent, as the forward interpreter computes them."""
    names: dict[int, str] = {}
    rows: list[dict] = []
    kept: list[Dual] = []  # (keeps every box alive, so its id names one row)

    def add(op: str, ins: str, box: Dual) -> None:
        names[id(box)] = f"v{len(rows) + 1 - len(xs)}"
        kept.append(box)
        rows.append({"var": names[id(box)], "op": op, "inputs": ins, "value": box.value,
                     "tangent": np.broadcast_to(box.tangent, shape(box.value)) + 0.0})

    def observe(prim: Any, args: Any, out: Dual) -> None:
        add(prim.name, ", ".join(names.get(id(a)) or _fmt(primal(a)) for a in args), out)

    with new_level(lambda level: ForwardInterpreter(level, observe)) as interp:
        inputs = [Dual(interp, x, np.asarray(s, dtype=float)) for x, s in zip(xs, seeds)]
        for x in inputs:
            add("input", "", x)
        f(*inputs)
    return rows


def _reverse_rows(f: Callable[..., Any], xs: list[Any]) -> tuple[list[dict], list[dict]]:
    """The tape's rows, then the backward sweep's steps, as the reverse interpreter runs them."""
    with new_level(lambda level: ReverseInterpreter(level, wengert=True)) as tape:
        leaves = [Node(None, {}, None, x, ()) for x in xs]
        out = f(*[Tensor(tape, x, leaf) for x, leaf in zip(xs, leaves)])
    nodes = leaves + tape.nodes
    name = {id(n): f"v{k + 1 - len(xs)}" for k, n in enumerate(nodes)}

    def inputs(node: Node) -> str:
        parent = dict(node.parents)
        return ", ".join(name[id(parent[i])] if i in parent else _fmt(v)
                         for i, v in enumerate(node.inputs))

    rows = [{"var": name[id(n)], "op": "input" if n.prim is None else n.prim.name,
             "inputs": "" if n.prim is None else inputs(n), "value": n.out} for n in nodes]
    adjoint: dict[int, Any] = {}
    steps: list[dict] = []

    def observe(node: Node, parent: Node, contribution: Any, total: Any) -> None:
        adjoint[id(parent)] = total
        steps.append({"step": str(len(steps) + 1), "update": f"{_bar(name[id(parent)])} += "
                      f"∂{name[id(node)]}/∂{name[id(parent)]} · {_bar(name[id(node)])}",
                      "rule": node.prim.name, "contribution": contribution, "total": total})

    if isinstance(out, Tensor) and out.node is not None:
        adjoint[id(out.node)] = np.ones_like(out.value)
        backprop([(out.node, adjoint[id(out.node)])], observe=observe)
    for row, node in zip(rows, nodes):
        row["adjoint"] = adjoint.get(id(node), 0.0)
    return rows, steps
