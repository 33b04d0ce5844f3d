"""Honest statuses: a cell whose numbers mean nothing is never ``ok``.

A measured cell gets one of these statuses in place of ``ok``:

* ``domain``: the point is outside f's domain, f(x) is NaN or infinite there, or the
  point itself is not finite. The message names the first primitive that produced the
  non-finite value and what it needs: ``f(-1) is nan: log(-1) is nan (log needs x > 0)``.
* ``nonfinite``: f(x) is finite but the derivative is not (a backend's answer is NaN or
  infinite, or the exact derivative is), e.g. sqrt at 0.
* ``kink``: f has no derivative at the point (``|x|`` at 0, a tie of ``max``: see
  :mod:`diffkit.bench.kinks`); every answer there is a convention, none is judged.
* ``inaccurate``: the error against the reference is above what the method promises
  (:meth:`~diffkit.backends.Backend.tolerance`) or the user's ``rtol``.

>>> import diffkit.numpy as dnp
>>> why_nonfinite(lambda x: 2 * dnp.log(x), -1.0)
'log(-1) is nan (log needs x > 0)'
>>> why_nonfinite(dnp.sqrt, 0.0, derivative=True)
"sqrt's derivative is inf at 0"
>>> why_nonfinite(lambda x: x * float("nan"), 0.5)
'mul(0.5, nan) is nan'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

NEEDS = {"log": "x > 0", "log1p": "x > -1", "sqrt": "x ≥ 0", "arcsin": "-1 ≤ x ≤ 1",
         "arccos": "-1 ≤ x ≤ 1", "div": "a non-zero divisor",
         "power": "a positive base for non-integer exponents"}
PASSING = ("ok", "n/a")  # statuses that are not failures (the CLI exits 0 only with these)


def numbers(values: Any) -> np.ndarray:
    """``values`` as a float array, or a complex one when any is complex.

    >>> numbers([1, 2j]).dtype
    dtype('complex128')
    """
    a = np.asarray(values)
    return a.astype(complex if np.iscomplexobj(a) else float)


def point_text(x: Any, limit: int = 4) -> str:
    """A short display of a point: ``-1``, ``[1, 2, 3]`` or ``[1, 2, 3, 4, …] (n = 1000)``.

    >>> point_text(np.arange(6.0)), point_text(1 + 2j)
    ('[0, 1, 2, 3, …] (n = 6)', '1+2j')
    """
    a = numbers(x)
    if a.ndim == 0:
        return f"{a.item():.6g}"
    flat = [f"{v:.6g}" for v in a.ravel()[:limit]]
    more = ", …" if a.size > limit else ""
    size = f" (n = {a.size})" if a.size > limit else ""
    return f"[{', '.join(flat)}{more}]{size}"


def _first_bad(values: Any) -> tuple[int, float | complex] | None:
    """(index, value) of the first entry that is not finite; None (no values: None too)."""
    if values is None:  # e.g. no reference: nothing to judge, not a NaN
        return None
    a = numbers(values).ravel()
    bad = np.flatnonzero(~np.isfinite(a))
    return (int(bad[0]), a[bad[0]].item()) if bad.size else None


def _operand(token: str, by_var: dict[str, dict], k: int) -> str:
    """An operand as shown in a message: a variable's value (at entry k), or a constant."""
    if token not in by_var:
        return token
    value = np.ravel(by_var[token]["value"])
    return point_text(value[min(k, value.size - 1)])


def why_nonfinite(f: Callable, x: Any, derivative: bool = False) -> str:
    """Which primitive first made f's value (or its derivative, along the first input
    entry) non-finite from finite inputs; ``""`` if none can be named."""
    from ..views.wengert import trace

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            rows = trace(f, x).rows
        except Exception:  # f may not run under the recorder; then no explanation
            return ""
    by_var = {r["var"]: r for r in rows}
    column = "tangent" if derivative else "value"
    for r in rows:
        if r["op"] == "input":
            continue
        ins = [by_var[v.strip()] for v in r["inputs"].split(",") if v.strip() in by_var]
        hit = _first_bad(r.get(column))
        if hit is None or any(_first_bad(i.get(column)) for i in ins):
            continue
        if derivative and _first_bad(r["value"]):
            continue
        at = ", ".join(_operand(token.strip(), by_var, hit[0])
                       for token in r["inputs"].split(","))
        if derivative:
            return f"{r['op']}'s derivative is {hit[1]:g} at {at}"
        need = f" ({r['op']} needs {NEEDS[r['op']]})" if r["op"] in NEEDS else ""
        return f"{r['op']}({at}) is {hit[1]:g}{need}"
    return ""


def judge(row: dict[str, Any], x: Any, ref: dict[str, Any], explain: Callable[[bool], str],
          rtol: float | None = None) -> dict[str, Any]:
    """``row`` with status ``domain`` / ``nonfinite`` and a message where its numbers are not
    finite (``explain(derivative)`` gives the reason; it is called only when needed),
    ``kink`` where the exact derivative is undefined, ``inaccurate`` where the error is
    above ``rtol`` or, without one, what the method promises (the row's ``tolerance``)."""
    if row.get("status") != "ok":
        return row
    at = point_text(x)
    if _first_bad(x):
        return {**row, "status": "domain", "message": f"the point {at} is not finite"}
    value = _first_bad(row.get("value"))
    if value is not None:
        why = explain(False)
        return {**row, "status": "domain",
                "message": f"f({at}) is {value[1]:g}" + (f": {why}" if why else "")}
    mine, exact = _first_bad(row.get("derivative")), _first_bad(ref.get("derivative"))
    if mine is None and exact is None:
        return _accuracy(row, at, ref, rtol)
    why = explain(True)
    what = (f"the derivative at {at} is {mine[1]:g}" if mine else
            f"the exact derivative at {at} is {exact[1]:g}; this finite answer means nothing")
    return {**row, "status": "nonfinite", "message": what + (f": {why}" if why else "")}


def _accuracy(row: dict[str, Any], at: str, ref: dict[str, Any], rtol: float | None
              ) -> dict[str, Any]:
    """``kink`` at a point with no derivative; ``inaccurate`` above the promised error.

    >>> _accuracy({"status": "ok", "error": 0.5, "tolerance": 1e-5}, "0", {}, None)["status"]
    'inaccurate'
    >>> _accuracy({"status": "ok", "error": 0.0}, "0", {"kink": "Abs(x) at x = 0"}, None)["message"]
    'f has no derivative at x = 0 (Abs(x) at x = 0): every answer is a convention, none is judged'
    """
    if ref.get("kink"):
        return {**row, "status": "kink", "message": f"f has no derivative at x = {at} "
                f"({ref['kink']}): every answer is a convention, none is judged"}
    error, promise = row.get("error"), rtol if rtol is not None else row.get("tolerance")
    if error is None or promise is None or error <= promise:
        return row
    whose = "the --rtol given" if rtol is not None else "what this method promises"
    return {**row, "status": "inaccurate",
            "message": f"error {error:.1e} is above {promise:g}, {whose}"}
