"""Which way wins a comparison, question by question, from its measured cells.

Four questions a reader brings to a comparison table: which answer is most accurate,
which is fastest per call, which is fastest over a number of calls once its one-off
setup is counted, and which needs least memory. Only cells whose status is ``ok`` take
part (an inaccurate, failed or n/a cell never wins); a tie names every tied way.

>>> rows = [{"backend": "reverse", "status": "ok", "error": 1e-16, "time_s": 3e-4,
...          "setup_s": 0.0, "peak_bytes": 900},
...         {"backend": "compiled", "status": "ok", "error": 1e-16, "time_s": 1e-4,
...          "setup_s": 0.05, "peak_bytes": 800},
...         {"backend": "numeric", "status": "inaccurate", "error": 1e-3, "time_s": 1e-6}]
>>> for question, who, figure in winners(rows, calls=100):
...     print(f"{question}: {who} ({figure})")
most accurate: reverse, compiled (error 1.0e-16)
fastest per call: compiled (100 µs)
fastest over 100 calls, setup included: reverse (30 ms)
least memory: compiled (800.0 B)
"""

from __future__ import annotations

import math
from typing import Any

from .harness import fmt_bytes, fmt_error, fmt_seconds

Record = dict[str, Any]
TIE = 1.05  # within 5 %: measured times and sizes this close are a tie


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _best(rows: list[Record], score: Any, exact: bool = False) -> tuple[list[str], float] | None:
    """The ways with the lowest ``score`` (within :data:`TIE` unless ``exact``)."""
    scored = [(s, r["backend"]) for r in rows if (s := score(r)) is not None]
    if not scored:
        return None
    low = min(s for s, _ in scored)
    bound = low if exact else low * TIE
    return [b for s, b in scored if s <= bound or s == low], low


def winners(records: list[Record], calls: int = 100) -> list[tuple[str, str, str]]:
    """``(question, winning ways, figure)`` per question that some ok cell answers."""
    ok = [r for r in records if r.get("status") == "ok"]
    tiny = 1e-300  # an exact 0 error ties with 0 only
    questions = [
        ("most accurate", lambda r: _number(r.get("error")), True,
         lambda v: f"error {fmt_error(v) if v > tiny else '0'}"),
        ("fastest per call", lambda r: _number(r.get("time_s")), False, fmt_seconds),
        (f"fastest over {calls:,} calls, setup included",
         lambda r: None if _number(r.get("time_s")) is None else
         (_number(r.get("setup_s")) or 0.0) + calls * r["time_s"], False, fmt_seconds),
        ("least memory", lambda r: _number(r.get("peak_bytes")), False, fmt_bytes),
    ]
    out = []
    for question, score, exact, show in questions:
        best = _best(ok, score, exact)
        if best is not None:
            out.append((question, ", ".join(best[0]), show(best[1])))
    return out
