"""A report's opening summary: what the measured cells show, one sentence per figure,
generated from the records (which method wins where, with its numbers).

>>> rows = [{"function": "exp", "backend": "forward", "status": "ok", "error": 0.0},
...         {"function": "exp", "backend": "numeric", "status": "ok", "error": 2e-11}]
>>> summary({"accuracy": rows})
['Accuracy: forward is the most accurate on 1 of 1 functions (worst error 0); numeric is least accurate (median error 2.0e-11).']
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from ..bench.harness import fmt_bytes, fmt_error, fmt_seconds

Record = dict[str, Any]


def _ok(rows: list[Record], *keys: str) -> list[Record]:
    return [r for r in rows if r.get("status", "ok") == "ok"
            and all(isinstance(r.get(k), (int, float)) for k in keys)]


def _accuracy(rows: list[Record]) -> str | None:
    fine = _ok(rows, "error")
    functions = sorted({r["function"] for r in fine})
    if not functions:
        return None
    wins: dict[str, int] = {}
    for fn in functions:
        best = min((r for r in fine if r["function"] == fn), key=lambda r: r["error"])
        wins[best["backend"]] = wins.get(best["backend"], 0) + 1
    top = max(wins, key=wins.get)
    worst = {b: statistics.median(r["error"] for r in fine if r["backend"] == b)
             for b in {r["backend"] for r in fine}}
    low = max(worst, key=worst.get)
    top_worst = max(r["error"] for r in fine if r["backend"] == top)
    return (f"Accuracy: {top} is the most accurate on {wins[top]} of {len(functions)} functions "
            f"(worst error {fmt_error(top_worst) if top_worst else '0'}); {low} is least "
            f"accurate (median error {fmt_error(worst[low])}).")


def _fastest(rows: list[Record], what: str) -> str | None:
    fine = _ok(rows, "time_s")
    if not fine:
        return None
    n = max((r.get("n") or 0) for r in fine)
    at = [r for r in fine if (r.get("n") or 0) == n]
    order = sorted(at, key=lambda r: r["time_s"])
    fast, slow = order[0], order[-1]
    where = f" at n = {n:,}" if n else ""
    ratio = f", {fast['cost_ratio']:.3g}× f" if isinstance(fast.get("cost_ratio"), float) else ""
    return (f"{what}: fastest{where} is {fast['backend']} on {fast['function']} "
            f"({fmt_seconds(fast['time_s'])}{ratio}); slowest {slow['backend']} "
            f"({fmt_seconds(slow['time_s'])}, {slow['time_s'] / fast['time_s']:.3g}× longer).")


def _jacobian(rows: list[Record]) -> str | None:
    fine = _ok(rows, "time_s")
    cells: dict[tuple, dict[str, float]] = {}
    for r in fine:
        cells.setdefault((r["m"], r["n"]), {})[r["backend"]] = r["time_s"]
    both = {k: v for k, v in cells.items() if {"forward", "reverse"} <= set(v)}
    if not both:
        return None
    rev = sorted(k for k, v in both.items() if v["reverse"] < v["forward"])
    fwd = sorted(k for k, v in both.items() if v["forward"] <= v["reverse"])
    text = lambda ks: ", ".join(f"{m}×{n}" for m, n in ks) or "none"  # noqa: E731
    return (f"Jacobians (outputs × inputs): reverse mode is faster at {text(rev)}; forward "
            f"mode at {text(fwd)}.")


def _memory(rows: list[Record]) -> str | None:
    fine = _ok(rows, "peak_bytes")
    if not fine:
        return None
    depth = max(r.get("depth") or 0 for r in fine)
    at = {r["backend"]: r["peak_bytes"] for r in fine if (r.get("depth") or 0) == depth}
    parts = ", ".join(f"{b} {fmt_bytes(v)}" for b, v in sorted(at.items(), key=lambda kv: kv[1]))
    return f"Memory: peak of one derivative at depth {depth}: {parts}."


def _swell(rows: list[Record]) -> str | None:
    sym = [r for r in rows if r.get("backend") == "symbolic"
           and isinstance(r.get("expr_nodes"), int)]
    if not sym:
        return None
    last = max(sym, key=lambda r: r["depth"])
    tape = [r for r in rows if r.get("depth") == last["depth"] and r.get("function") ==
            last["function"] and isinstance(r.get("tape_ops"), int)]
    tail = f", the tape {tape[0]['tape_ops']:,} operations" if tape else ""
    return (f"Swell: at depth {last['depth']} of {last['function']} the symbolic derivative "
            f"has {last['expr_nodes']:,} nodes as a tree and {last['expr_dag_nodes']:,} after "
            f"CSE{tail}.")


def _steps(rows: list[Record]) -> str | None:
    fine = [r for r in rows if r.get("sweep") == "steps" and isinstance(r.get("error"), float)]
    if not fine:
        return None
    best = {}
    for r in fine:
        if r["method"] not in best or r["error"] < best[r["method"]]:
            best[r["method"]] = r["error"]
    order = sorted(best.items(), key=lambda kv: kv[1])
    return ("Finite differences, best error over the step: "
            + ", ".join(f"{m} {fmt_error(e)}" for m, e in order) + ".")


def _graphmode(rows: list[Record]) -> str | None:
    from .graphmode import break_even  # matplotlib: only when a graph-mode figure is summed up

    even = {n: c for n, c in break_even(rows).items() if c is not None}
    if not even:
        return None
    n = max(even)
    return (f"Static graph: at n = {n:,} compiling pays for itself after {even[n]:.3g} "
            "calls of the gradient.")


SENTENCES: dict[str, Callable[[list[Record]], str | None]] = {
    "accuracy": _accuracy, "cost": lambda rows: _fastest(rows, "Cost"),
    "scaling": lambda rows: _fastest(rows, "Time"), "jacobian": _jacobian,
    "memory": _memory, "swell": _swell, "steps": _steps, "graphmode": _graphmode}


def summary(data: dict[str, list[Record]]) -> list[str]:
    """One sentence per figure whose cells say something (figures with no finished cell
    are left out)."""
    out = []
    for fig, rows in data.items():
        sentence = SENTENCES.get(fig, lambda rows: None)(rows)
        if sentence:
            out.append(sentence)
    return out
