"""The report's "which method" table: advise's recommendation per function, and whether the
measured best agreed.

For each function of the section, :func:`~diffkit.bench.advise.advise` recommends a method
from its few seconds of probing; then every method it weighs is measured by the harness in
isolated cells against the high-precision reference (the same cells the other figures use,
so nothing is measured twice). The measured best is the cheapest method whose measured
error meets ``accuracy``, setup spread over ``calls`` calls as advise counts it; the
recommendation's rank among those methods says whether they agreed.

>>> row = agreement({"function": "f", "recommended": "forward", "runner_up": "reverse"},
...     [{"backend": "forward", "status": "ok", "error": 0.0, "time_s": 2e-6},
...      {"backend": "reverse", "status": "ok", "error": 0.0, "time_s": 1e-6},
...      {"backend": "numeric", "status": "ok", "error": 1e-6, "time_s": 1e-7}], 1e-8, 100)
>>> row["measured best"], row["rank"], row["agreed"], row["time / best"]
('reverse', '2 of 2', 'no', 2.0)
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..backends import backend, label
from ..bench.harness import append_result, fmt_error, fmt_seconds, read_results
from ..core import DiffkitError

Record = dict[str, Any]
TITLE = "Which method: advise's recommendation against the measured best"
EXPLAINS = (
    "For each function, diffkit advise recommended one method from a few seconds of probing "
    "(inputs and outputs, the cost of f, each method run once). Then every method it weighs "
    "was measured in isolated cells against the high-precision reference. The measured best "
    "is the cheapest method whose error meets the accuracy target, setup spread over the "
    "given number of calls; rank is the recommendation's place among the methods meeting "
    "the target. agreed: yes at rank 1; close within 1.5× of the best's cost (timing noise "
    "and the issue's bar); no otherwise, or when the recommendation missed the target.")
COLUMNS = ("function", "recommended", "runner-up", "measured error", "measured cost",
           "measured best", "best cost", "time / best", "rank", "agreed", "message")
DEFAULTS: dict[str, Any] = {"functions": [], "accuracy": 1e-8, "calls": 100}


def load(section: Any, where: str) -> dict[str, Any]:
    """The ``[which]`` section with its defaults, checked (no functions: no table).

    >>> load({"functions": ["exp"]}, "spec")
    {'functions': ['exp'], 'accuracy': 1e-08, 'calls': 100}
    """
    if not isinstance(section, dict) or set(section) - set(DEFAULTS):
        raise DiffkitError(f"{where}: [which] takes functions, accuracy and calls, e.g. "
                           "[which] functions = [\"exp\"]")
    s = {**DEFAULTS, **section}
    if not isinstance(s["functions"], list) or not all(
            isinstance(f, str) and f for f in s["functions"]):
        raise DiffkitError(f"{where}: [which] functions must be a list of names, e.g. [\"exp\"]")
    if not isinstance(s["accuracy"], (int, float)) or not s["accuracy"] > 0:
        raise DiffkitError(f"{where}: [which] accuracy must be a positive number, e.g. 1e-8")
    if type(s["calls"]) is not int or s["calls"] < 1:
        raise DiffkitError(f"{where}: [which] calls must be a positive integer, e.g. 100")
    s["accuracy"] = float(s["accuracy"])
    return s


def methods() -> list[str]:
    """The harness labels of the methods advise weighs."""
    from ..bench.advise import methods as advised

    return [label(backend(m)) for m in advised()]


def recommendation(fn: str, accuracy: float, calls: int, results: Any) -> Record:
    """advise's answer for ``fn``, from the results file or computed now and stored there."""
    for r in read_results(results):
        if (r.get("sweep"), r.get("function"), r.get("accuracy"), r.get("calls")) == (
                "which", fn, accuracy, calls):
            return r
    from ..bench.advise import advise

    start = time.perf_counter()
    a = advise(fn, accuracy=accuracy, calls=calls)
    name = (lambda c: None if c is None else label(backend(c.method)))
    record = {"sweep": "which", "function": fn, "accuracy": accuracy, "calls": calls,
              "recommended": name(a.best), "runner_up": name(a.runner_up),
              "predicted_time_s": a.best.time_s if a.best else None,
              "advise_s": time.perf_counter() - start, "reasons": a.reasons}
    append_result(results, record)
    return record


def cost(row: Record, calls: int) -> float:
    """Seconds per call with setup spread over ``calls`` calls (inf without a time)."""
    t = row.get("time_s")
    return (row.get("setup_s") or 0.0) / calls + t if t is not None else math.inf


def agreement(advice: Record, measured: list[Record], accuracy: float, calls: int) -> Record:
    """One row of the table: the recommendation, the measured best, rank and agreement."""
    meets = sorted((r for r in measured if r.get("status") == "ok"
                    and r.get("error") is not None and r["error"] <= accuracy),
                   key=lambda r: cost(r, calls))
    best = meets[0] if meets else None
    rec = next((r for r in measured if r.get("backend") == advice["recommended"]), None)
    row: Record = {"function": advice["function"], "recommended": advice["recommended"] or "none",
                   "runner-up": advice.get("runner_up"), "measured best":
                   best["backend"] if best else "none",
                   "best cost": cost(best, calls) if best else None, "status": "ok"}
    if rec is not None:
        row["measured error"], row["measured cost"] = rec.get("error"), cost(rec, calls)
    ranks = [r["backend"] for r in meets]
    if advice["recommended"] is None:
        row["agreed"] = "yes" if best is None else "no"
        row["status"] = "ok" if best is None else "disagreed"
        row["message"] = "advise found no method meeting the target" + (
            f"; measured, {best['backend']} meets it" if best else "; none does when measured")
    elif rec is None or rec["backend"] not in ranks:
        row["agreed"], row["status"] = "no", "missed"
        row["message"] = ("the recommendation was not measured" if rec is None else
                          f"measured {rec.get('status')}: {rec.get('message') or ''}".strip()
                          if rec.get("status") != "ok" else
                          f"measured error above the target {accuracy:g}")
    else:
        k = ranks.index(rec["backend"])
        row["rank"] = f"{k + 1} of {len(ranks)}"
        row["time / best"] = round(cost(rec, calls) / cost(best, calls), 2)
        row["agreed"] = "yes" if k == 0 else "close" if row["time / best"] <= 1.5 else "no"
        row["status"] = "ok" if row["agreed"] != "no" else "disagreed"  # highlighted
    return row


def display(row: Record) -> Record:
    """The row with its figures as text (errors in e-notation, costs with units)."""
    shown = dict(row)
    for key, fmt in (("measured error", fmt_error), ("measured cost", fmt_seconds),
                     ("best cost", fmt_seconds)):
        if isinstance(row.get(key), (int, float)):
            shown[key] = fmt(row[key])
    if row.get("time / best") is not None:
        shown["time / best"] = f"{row['time / best']:.2f}×"
    return shown


def rows(section: dict[str, Any], run: Any, progress: Any = None) -> list[Record]:
    """The table's rows; ``run`` is the report's :class:`~diffkit.reporting.runner.Runner`
    (its cells are measured once and kept in its results file)."""
    out = []
    labels = methods()
    for fn in section["functions"]:
        if progress:
            progress(f"which · {fn}")
        advice = recommendation(fn, section["accuracy"], section["calls"], run.path)
        out.append(agreement(advice, run.compared(fn, labels), section["accuracy"],
                             section["calls"]))
    return out
