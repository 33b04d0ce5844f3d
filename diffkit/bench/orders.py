"""The k-th derivative of f: R → R by every way, side by side (``diffkit compare --order k``).

The ways: ``symbolic`` (SymPy differentiates the closed form k times, lambdified after
CSE), ``numeric`` (the central k-th difference, step ~ eps^(1/(k+2))), ``nested forward``
(``dk.derivative`` nested k times), ``forward-over-reverse`` (reverse mode once, forward
mode k-1 times over it), ``taylor`` (``dk.derivatives``: one Taylor pass, every order up
to k) and ``compiled`` (``dk.derivative(backend="compiled")`` nested k times).

The reference is independent of every derivative rule: f run on SymPy symbols, lambdified
to mpmath (after CSE) and differentiated by ``mpmath.diff`` at 40 digits. Each way runs in
its own process under a time limit (nested ways grow like 2^k or worse: a timeout is an
answer too).

>>> rows = compare_order("exp", 3, methods=["taylor", "nested forward"], repeat=1)
>>> [(r["method"], r["status"], round(r["derivative"], 6)) for r in rows]
[('taylor', 'ok', 2.718282), ('nested forward', 'ok', 2.718282)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import DiffkitError, NotApplicable
from ..transforms.functional import derivative
from ..transforms.taylor import derivatives
from .cells import run_isolated
from .measure import error_against
from .probes import first_call, timed
from .targets import find_target

METHODS = ("symbolic", "numeric", "nested forward", "forward-over-reverse", "taylor", "compiled")


def _nested(f: Callable, k: int, backend: str, first: str | None = None) -> Callable:
    g = f
    for i in range(k):
        g = derivative(g, backend=first if (i == 0 and first) else backend)
    return g


def _symbolic(f: Callable, x: Any, k: int) -> Callable:
    import sympy as sp  # (SymPy: loaded when a symbolic derivative is asked for)

    from ..interpreters.symbolic import lambdify_modules, to_sympy  # (imports SymPy)

    syms, expr = to_sympy(f, x)
    return sp.lambdify(syms, sp.diff(expr, syms[0], k), modules=lambdify_modules(), cse=True)


def _numeric(f: Callable, k: int) -> Callable:
    """Σ_j (-1)^j C(k, j) f(x + (k/2 - j) h) / h^k, h = eps^(1/(k+2)) max(1, |x|)."""
    def kth(x: Any) -> Any:
        h = np.finfo(float).eps ** (1.0 / (k + 2)) * max(1.0, abs(float(x)))
        terms = [(-1) ** j * math.comb(k, j) * np.asarray(f(x + (k / 2 - j) * h)) for j in range(k + 1)]
        return sum(terms) / h ** k
    return kth


def way(method: str, f: Callable, x: Any, k: int) -> Callable[[Any], Any]:
    """The k-th derivative of ``f`` as a function of x, computed by ``method``."""
    if method == "symbolic":
        return _symbolic(f, x, k)
    if method == "numeric":
        return _numeric(f, k)
    if method == "nested forward":
        return _nested(f, k, "forward")
    if method == "forward-over-reverse":
        return _nested(f, k, "forward", first="reverse")
    if method == "taylor":
        all_orders = derivatives(f, k)
        return lambda v: all_orders(v)[k]
    if method == "compiled":
        return _nested(f, k, "compiled")
    raise DiffkitError(f"unknown method {method!r} for --order; use some of {', '.join(METHODS)}")


def reference(f: Callable, x: float, k: int, dps: int = 40) -> float:
    """``mpmath.diff`` of f's closed form, run in mpmath at ``dps`` digits."""
    import mpmath  # (mpmath and SymPy: loaded when a reference is computed)
    import sympy as sp

    from ..interpreters.symbolic import to_sympy  # (imports SymPy)

    syms, expr = to_sympy(f, x)
    fn = sp.lambdify(syms, expr, modules="mpmath", cse=True)
    with mpmath.workdps(dps):
        return float(mpmath.diff(fn, mpmath.mpf(float(x)), k))


def _cell(method: str, f: Callable, x: float, k: int, ref: float | None, repeat: int) -> dict:
    try:
        fn = way(method, f, x, k)
        value, first = first_call(lambda: float(np.asarray(fn(x))))
    except NotApplicable as exc:
        return {"status": "n/a", "message": str(exc)}
    per_call, _ = timed(lambda: fn(x), repeat=repeat, min_time=0.02)
    error = None if ref is None else error_against(value, ref)[0]
    return {"status": "ok", "derivative": value, "error": error, "time_s": per_call,
            "first_call_s": first}


def compare_order(spec: str | Callable, k: int, x: Any = None, *, methods: Sequence[str] | None = None,
                  at: dict[str, Any] | None = None, depth: int | None = None,
                  timeout: float = 60.0, repeat: int = 3) -> list[dict[str, Any]]:
    """One record per method: the k-th derivative, its error against the reference, the
    time per call and of the first call (setup included), or a status (timeout, n/a)."""
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise DiffkitError(f"--order must be an integer >= 1, got {k!r}")
    target = find_target(spec, at=at, depth=depth, x=x)
    if np.ndim(target.x) != 0:
        raise DiffkitError(f"--order compares derivatives of f: R -> R; {target.name} takes "
                           f"{np.size(target.x)} inputs (use a scalar catalog function or formula)")
    x0 = float(target.x)
    ref_cell = run_isolated(lambda: {"reference": reference(target.f, x0, k)}, timeout=timeout)
    ref = ref_cell.get("reference")
    rows = []
    for method in methods or METHODS:
        if method not in METHODS:
            raise DiffkitError(f"unknown method {method!r} for --order; use some of {', '.join(METHODS)}")
        cell = run_isolated(lambda m=method: _cell(m, target.f, x0, int(k), ref, repeat), timeout=timeout)
        rows.append({"function": target.name, "order": int(k), "x": x0, "method": method,
                     "reference": ref, **cell})
    return rows
