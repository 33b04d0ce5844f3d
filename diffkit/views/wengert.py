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
>>> [r["formula"] for r in t.rows]          # numbered as Baydin et al. (2018), Table 2
['x1', 'x2', 'ln v-1', 'v-1 × v0', 'sin v0', 'v1 + v2', 'v4 − v3']
>>> float(t.rows[-1]["tangent"])   # ∂f/∂x1 at (2, 5) = 1/2 + 5
5.5
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..interpreters.forward import Dual, ForwardInterpreter
from ..interpreters.tape import Node, ReverseInterpreter, backprop
from ..interpreters.tensor import Tensor
from ..ir.tracer import input_names
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
        cols = ["var", "formula", "value", "tangent" if self.mode == "forward" else "adjoint"]
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
    widths = [max(_width(c), *(_width(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(_pad(c, w) for c, w in zip(cols, widths)),
             "  ".join("-" * w for w in widths)]
    return "\n".join(lines + ["  ".join(_pad(c, w) for c, w in zip(r, widths)) for r in rows])


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal: a combining mark (the bar of v̄) takes none."""
    return sum(not unicodedata.combining(ch) for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


ORDERS = ("textbook", "evaluation")
_INFIX = {"add": "+", "sub": "−", "mul": "×", "div": "/", "power": "^"}
_NAMED = {"log": "ln", "neg": "−"}


def trace(f: Callable[..., Any], *args: Any, mode: str = "forward", seed: Any = None,
          order: str = "textbook") -> EvaluationTrace:
    """The evaluation trace of ``f`` at ``args`` (see the module docstring).

    ``seed``: the tangent of each input in forward mode (a tuple, one per argument);
    by default 1 for the first argument's first entry and 0 elsewhere.
    ``order="textbook"`` numbers each operation as soon as its operands exist (ties in
    the order Python met them), as Baydin et al. (2018) number their Tables 2 and 3;
    ``"evaluation"`` keeps the order in which Python evaluated them. Any order in which
    every operand comes before its use gives the same values, tangents and adjoints.
    """
    if mode not in ("forward", "reverse"):
        raise ValueError(f"mode must be 'forward' or 'reverse', got {mode!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be 'textbook' or 'evaluation', got {order!r}")
    xs = [np.asarray(a, dtype=float) for a in args]
    xs = [x[()] if x.ndim == 0 else x for x in xs]
    if mode == "forward":
        seeds = seed if seed is not None else [
            np.eye(1, np.size(x)).reshape(shape(x))[()] if k == 0 else np.zeros(shape(x))
            for k, x in enumerate(xs)]
        steps, rows = _forward_steps(f, xs, seeds), []
    else:
        steps, rows = _reverse_steps(f, xs)
    names = input_names(f, len(xs))
    for step, label in zip(steps, names):
        step["args"] = [label]  # an input's formula is its parameter's name: v-1 = x1
    return EvaluationTrace(mode, *_named(steps, rows, len(xs), order))


def _forward_steps(f: Callable[..., Any], xs: list[Any], seeds: list[Any]) -> list[dict]:
    """One step per value, with its tangent, as the forward interpreter computes them;
    ``args`` holds each operand's step number (or its value, for a constant)."""
    number: dict[int, int] = {}
    steps: list[dict] = []
    kept: list[Dual] = []  # (keeps every box alive, so its id names one step)

    def add(op: str, args: list[Any], box: Dual) -> None:
        number[id(box)] = len(steps)
        kept.append(box)
        steps.append({"op": op, "args": args, "value": box.value,
                      "tangent": np.broadcast_to(box.tangent, shape(box.value)) + 0.0})

    def observe(prim: Any, args: Any, out: Dual) -> None:
        add(prim.name, [number.get(id(a), primal(a)) for a in args], out)

    with new_level(lambda level: ForwardInterpreter(level, observe)) as interp:
        inputs = [Dual(interp, x, np.asarray(s, dtype=float)) for x, s in zip(xs, seeds)]
        for x in inputs:
            add("input", [], x)
        f(*inputs)
    return steps


def _reverse_steps(f: Callable[..., Any], xs: list[Any]) -> tuple[list[dict], list[dict]]:
    """The tape's steps with their adjoints, then the backward sweep's contributions
    ``(node step, parent step, contribution)``, as the reverse interpreter runs them."""
    with new_level(lambda level: ReverseInterpreter(level, wengert=True)) as tape:
        leaves = [Node(None, {}, None, x, ()) for x in xs]
        out = f(*[Tensor(tape, x, leaf) for x, leaf in zip(xs, leaves)])
    nodes = leaves + tape.nodes
    number = {id(n): k for k, n in enumerate(nodes)}

    def args(node: Node) -> list[Any]:
        parent = dict(node.parents)
        return [number[id(parent[i])] if i in parent else v for i, v in enumerate(node.inputs)]

    steps = [{"op": "input" if n.prim is None else n.prim.name,
              "args": [] if n.prim is None else args(n), "value": n.out} for n in nodes]
    adjoint: dict[int, Any] = {}
    sweep: list[dict] = []

    def observe(node: Node, parent: Node, contribution: Any, total: Any) -> None:
        adjoint[id(parent)] = total
        sweep.append({"node": number[id(node)], "parent": number[id(parent)],
                      "contribution": contribution})

    if isinstance(out, Tensor) and out.node is not None:
        adjoint[id(out.node)] = np.ones_like(out.value)
        backprop([(out.node, adjoint[id(out.node)])], observe=observe)
    for step, node in zip(steps, nodes):
        step["adjoint"] = adjoint.get(id(node), 0.0)
    return steps, sweep


def _named(steps: list[dict], sweep: list[dict], n_inputs: int, order: str
           ) -> tuple[list[dict], list[dict]]:
    """Rows named v₋ₙ₊₁ … v₀, v₁ … in ``order``, and the sweep's rows in the matching
    reverse order (each node's contributions after every use of it is done)."""
    rank = list(range(len(steps)))
    if order == "textbook":  # level by level: an operation as soon as its operands exist
        depth = [0] * len(steps)
        for k, s in enumerate(steps):
            depth[k] = 1 + max((depth[a] for a in s["args"] if type(a) is int), default=-1)
        sequence = sorted(range(len(steps)), key=lambda k: (k >= n_inputs, depth[k], k))
        rank = [0] * len(steps)
        for new, k in enumerate(sequence):
            rank[k] = new
    name = [f"v{rank[k] + 1 - n_inputs}" for k in range(len(steps))]
    rows = []
    for k in sorted(range(len(steps)), key=rank.__getitem__):
        s = steps[k]
        operands = [name[a] if type(a) is int else a if type(a) is str else _fmt(a)
                    for a in s["args"]]
        rows.append({"var": name[k], "op": s["op"],
                     "inputs": "" if s["op"] == "input" else ", ".join(operands),
                     "formula": _formula(s["op"], operands),
                     **{key: s[key] for key in ("value", "tangent", "adjoint") if key in s}})
    adjoint_rows, totals = [], {}
    for c in sorted(sweep, key=lambda c: -rank[c["node"]]):  # stable: a node's own order
        node, parent = name[c["node"]], name[c["parent"]]
        totals[parent] = c["contribution"] if parent not in totals else totals[parent] + c[
            "contribution"]
        adjoint_rows.append({"step": str(len(adjoint_rows) + 1),
                             "update": f"{_bar(parent)} += ∂{node}/∂{parent} · {_bar(node)}",
                             "rule": steps[c["node"]]["op"], "contribution": c["contribution"],
                             "total": totals[parent]})
    return rows, adjoint_rows


def _formula(op: str, operands: list[str]) -> str:
    """``ln v-1``, ``v-1 × v0``, ``v4 − v3``: an operation in the textbook's notation."""
    if op == "input":
        return operands[0]
    if op in _INFIX and len(operands) == 2:
        return f" {_INFIX[op]} ".join(operands)
    if len(operands) == 1:
        return f"{_NAMED.get(op, op)} {operands[0]}"
    return f"{op}({', '.join(operands)})"
