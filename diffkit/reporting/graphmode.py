"""Static against dynamic graph: what compiling buys per call, and what it costs once.

The eager ``reverse`` backend builds its graph (the tape) anew in every call, as
PyTorch and MindSpore's PYNATIVE mode do; the ``compiled`` backend traces once, then
runs generated code (GRAPH_MODE, ``jax.jit``). Compiling pays off after

    break-even calls = setup(compiled) / (time(reverse) - time(compiled))

calls; never, where the compiled call is not faster.

>>> rows = [{"function": "f", "backend": "reverse", "n": 10, "time_s": 1e-3},
...         {"function": "f", "backend": "compiled", "n": 10, "time_s": 2e-4, "setup_s": 4e-3}]
>>> break_even(rows)
{10: 5.0}
>>> fig = graphmode_figure(rows)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from .plots import BASE_COLORS, _figure, _legend, _log_scales, _num, ok

Record = dict[str, Any]


def _by_n(rows: Sequence[Record], backend: str, key: str) -> dict[int, float]:
    return {r["n"]: float(r[key]) for r in rows
            if r.get("backend") == backend and ok(r) and r.get("n") and _num(r.get(key))}


def break_even(rows: Sequence[Record]) -> dict[int, float | None]:
    """Calls after which compiled (setup included) is cheaper than eager reverse, per n
    (None: the compiled call is not faster, so never)."""
    rev, comp, setup = (_by_n(rows, "reverse", "time_s"), _by_n(rows, "compiled", "time_s"),
                        _by_n(rows, "compiled", "setup_s"))
    out: dict[int, float | None] = {}
    for n in sorted(set(rev) & set(comp) & set(setup)):
        gain = rev[n] - comp[n]
        out[n] = setup[n] / gain if gain > 0 else None
    return out


def graphmode_figure(rows: Sequence[Record]) -> Figure:
    """Left: per-call gradient time against n, eager reverse and compiled, and the
    compiled backend's one-off setup (trace + transform + optimize + generate).
    Right: the break-even number of calls against n."""
    fig, (left, right) = _figure(10.0, 4.0, 2)
    for backend, key, label, ls in (("reverse", "time_s", "eager reverse: per call", "-"),
                                    ("compiled", "time_s", "compiled: per call", "-"),
                                    ("compiled", "setup_s", "compiled: setup, once", "--")):
        pts = sorted(_by_n(rows, backend, key).items())
        if pts:
            left.plot(*zip(*pts), ls=ls, marker="o", ms=4, label=label,
                      color=BASE_COLORS[backend])
    fn = ", ".join(dict.fromkeys(str(r.get("function")) for r in rows)) or "(no data)"
    left.set_title(f"gradient of {fn}: dynamic vs static graph", fontsize=10)
    left.set_xlabel("input dimension n")
    left.set_ylabel("seconds")
    _log_scales(left)
    left.grid(True, alpha=0.3)
    _legend(left, fontsize=7)
    even = break_even(rows)
    pts = [(n, c) for n, c in even.items() if c is not None]
    if pts:
        right.plot(*zip(*pts), marker="s", ms=4, color=BASE_COLORS["compiled"],
                   label="setup / (reverse - compiled)")
    for n, c in even.items():
        if c is None:
            right.annotate("never", (n, 1.0), fontsize=7, ha="center")
    right.set_title("calls before compiling pays off", fontsize=10)
    right.set_xlabel("input dimension n")
    right.set_ylabel("break-even number of calls")
    _log_scales(right)
    right.grid(True, alpha=0.3)
    _legend(right, fontsize=7)
    return fig
