"""``diffkit compare --order k`` and ``--sparse``: the tables of the two other comparisons
(the k-th derivative by every way; dense against coloured Jacobians)."""

from __future__ import annotations

from typing import Any

from .output import emit, render, wrapped


def order_report(func: str, k: int, depth: int | None, at: dict | None, methods: list[str] | None,
                 timeout: float, repeat: int, fmt: str, output: str | None, colored: bool
                 ) -> list[dict[str, Any]]:
    """Run ``compare_order`` and print it; returns the records."""
    from diffkit.bench.harness import fmt_error, fmt_seconds
    from diffkit.bench.orders import compare_order

    records = compare_order(func, k, at=at, depth=depth, methods=methods, timeout=timeout,
                            repeat=repeat)
    rows = [["method", "status", f"f^({k})", "error", "per call", "first call"]]
    rows += [[r["method"], r["status"], _number(r.get("derivative")), fmt_error(r.get("error")),
              fmt_seconds(r.get("time_s")), fmt_seconds(r.get("first_call_s"))] for r in records]
    x = records[0]["x"] if records else float("nan")
    _show(records, rows, f"{func}: derivative of order {k} at x = {x:g}",
          "error: relative, against mpmath.diff of f's closed form at 40 digits; first call: "
          "setup (deriving, compiling) and one evaluation", fmt, output, colored)
    return records


def sparse_report(func: str, n: int | None, methods: list[str] | None, timeout: float,
                  repeat: int, fmt: str, output: str | None, colored: bool) -> list[dict[str, Any]]:
    """Run ``compare_sparse`` and print it; returns the records."""
    from diffkit.bench.coloring import compare_sparse
    from diffkit.bench.harness import fmt_error, fmt_seconds

    records = compare_sparse(func, n=n, methods=methods, timeout=timeout, repeat=repeat)
    rows = [["method", "status", "error", "per call", "first call", "size"]]
    rows += [[r["method"], r["status"], fmt_error(r.get("error")), fmt_seconds(r.get("time_s")),
              fmt_seconds(r.get("first_call_s")), _size(r)] for r in records]
    _show(records, rows, f"{func}: Jacobian at n = {records[0]['n'] if records else '?'}, dense "
          "and coloured", "error: relative max-norm against the dense forward-mode Jacobian; "
          "first call: with the pattern and colouring, which later calls reuse", fmt, output,
          colored)
    return records


def _show(records: list[dict[str, Any]], rows: list[list[str]], title: str, note: str, fmt: str,
          output: str | None, colored: bool) -> None:
    """The records in ``fmt``; as a table: the rows, each way's message, and ``note``."""
    if fmt != "table":
        emit(render(records, fmt), output)
        return
    notes = [f"{r['method']}: {r['message']}" for r in records if r.get("message")] + [note]
    emit(render([], "table", table=rows, title=title, colored=colored) + "\n" + wrapped(notes),
         output)


def _number(v: Any) -> str:
    return "—" if v is None else f"{v:.10g}"


def _size(r: dict[str, Any]) -> str:
    if r.get("passes") is None:
        return "—"
    unit = "f-evals" if r["method"] in ("cpr", "dense numeric") else "passes"
    colours = f"{r['colors']} colours, " if r.get("colors") is not None else ""
    return f"{colours}{r['passes']} {unit}"
