"""Dense against coloured Jacobians, side by side (``diffkit compare --sparse``).

The ways: ``dense forward`` / ``dense reverse`` (``dk.jacobian``: a pass per input or per
output), ``dense numeric`` (central differences, 2n evaluations), ``coloured forward`` /
``coloured reverse`` (``dk.sparse_jacobian``: a pass per colour) and ``cpr`` (coloured
central differences, two evaluations per colour). Each record holds the time per call
(the coloured ways' pattern and colouring are made once, in the first call, timed
apart), the colours and passes, and the error against the dense forward-mode Jacobian
(exact to rounding: the column says so). Each way runs in its own process under a time
limit.

>>> rows = compare_sparse("broyden", n=50, methods=["dense forward", "coloured forward"], repeat=1)
>>> [(r["method"], r["status"], r["passes"]) for r in rows]
[('dense forward', 'ok', 50), ('coloured forward', 'ok', 3)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import DiffkitError
from ..transforms.functional import jacobian
from ..transforms.sparse import sparse_jacobian
from .cells import run_isolated
from .probes import first_call, timed
from .targets import find_target

METHODS = ("dense forward", "dense reverse", "dense numeric", "coloured forward",
           "coloured reverse", "cpr")


def way(method: str, f: Callable, x: np.ndarray) -> tuple[Callable[[Any], Any], dict[str, Any]]:
    """The Jacobian of ``f`` by ``method`` (a function of x: a dense array, or a
    ``scipy.sparse`` one for the coloured ways) and its colours and passes at x."""
    n, m = x.size, np.size(f(x))
    if method.startswith("dense"):
        backend = method.split()[1]
        passes = {"forward": n, "reverse": m, "numeric": 2 * n}[backend]
        return jacobian(f, backend=backend), {"colors": None, "passes": passes}
    mode = "cpr" if method == "cpr" else method.split()[1]
    coloured = sparse_jacobian(f, mode=mode)
    plan = coloured.plan(x)
    return coloured, {"colors": plan.colors, "passes": plan.passes}


def measure_way(method: str, f: Callable, x: np.ndarray, repeat: int, keep: bool = True) -> dict:
    """One way measured at x: time per call, first call, colours, passes (and the
    Jacobian as a dense array, with ``keep``)."""
    def setup() -> tuple[Callable, dict, Any]:
        fn, size = way(method, f, x)
        return fn, size, fn(x)

    (fn, size, jac), first = first_call(setup)
    jac = np.reshape(jac.toarray() if hasattr(jac, "toarray") else jac, (-1, x.size))
    per_call, _ = timed(lambda: fn(x), repeat=repeat, min_time=0.02)
    return {"status": "ok", "time_s": per_call, "first_call_s": first, **size,
            **({"jacobian": jac} if keep else {})}


def compare_sparse(spec: str | Callable, x: Any = None, *, n: int | None = None,
                   methods: Sequence[str] | None = None, timeout: float = 60.0,
                   repeat: int = 3) -> list[dict[str, Any]]:
    """One record per method: time per call, first call, colours, passes, and the error
    (max-norm, relative) against the dense forward-mode Jacobian."""
    target = find_target(spec, n=n, x=x)
    x0 = np.atleast_1d(np.asarray(target.x, dtype=float))
    chosen = list(methods or METHODS)
    for method in chosen:
        if method not in METHODS:
            raise DiffkitError(f"unknown method {method!r} for --sparse; use some of "
                               f"{', '.join(METHODS)}")
    cells = {m: run_isolated(lambda m=m: measure_way(m, target.f, x0, repeat), timeout=timeout)
             for m in dict.fromkeys(["dense forward", *chosen])}
    ref = cells["dense forward"].get("jacobian")
    rows = []
    for method in chosen:
        cell = dict(cells[method])
        jac = cell.pop("jacobian", None)
        if jac is not None and ref is not None:
            scale = float(np.max(np.abs(ref))) or 1.0
            cell["error"] = float(np.max(np.abs(jac - ref))) / scale
        rows.append({"function": target.name, "n": int(x0.size), "method": method, **cell})
    return rows
