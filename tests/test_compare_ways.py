"""``diffkit compare --order k`` and ``--sparse`` end to end, and their library functions."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from test_cli import run

from diffkit.bench.coloring import compare_sparse
from diffkit.bench.orders import compare_order


def test_order_compares_every_way_against_the_closed_form():
    rows = {r["method"]: r for r in compare_order("exp(sin(x))", 4, at={"x": 0.0}, repeat=1)}
    assert set(rows) == {"symbolic", "numeric", "nested forward", "forward-over-reverse",
                         "taylor", "compiled"}
    assert math.isclose(rows["taylor"]["reference"], -3.0, rel_tol=1e-14)  # by hand: -3
    for method in ("symbolic", "nested forward", "forward-over-reverse", "taylor", "compiled"):
        assert rows[method]["status"] == "ok" and rows[method]["error"] < 1e-12, method
    assert 1e-8 < rows["numeric"]["error"] < 1e-1  # a 4th difference loses most digits


def test_order_cli_table_and_json(capsys):
    code, out, _ = run(capsys, "compare", "sin(x)", "--at", "x=0.5", "--order", "3",
                       "--backends", "taylor,numeric")
    assert code == 0 and "taylor" in out and "f^(3)" in out and "mpmath" in out
    code, out, _ = run(capsys, "compare", "sin(x)", "--at", "x=0.5", "--order", "3",
                       "--backends", "taylor", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and math.isclose(row["derivative"], -math.cos(0.5), rel_tol=1e-14)


def test_order_mistakes_are_one_line(capsys):
    code, _, err = run(capsys, "compare", "rosenbrock", "--order", "2")
    assert code == 2 and "R -> R" in err and "Traceback" not in err
    code, _, err = run(capsys, "compare", "sin(x)", "--order", "2", "--backends", "taylor,magic")
    assert code == 2 and "unknown method 'magic'" in err
    code, _, err = run(capsys, "compare", "broyden", "--order", "2", "--sparse")
    assert code == 2 and "one of them" in err


def test_sparse_cli_reports_colours_and_passes(capsys):
    code, out, _ = run(capsys, "compare", "broyden", "--dim", "300", "--sparse", "--format", "json")
    rows = {r["method"]: r for r in json.loads(out)}
    assert code == 0
    assert (rows["coloured forward"]["colors"], rows["coloured forward"]["passes"]) == (3, 3)
    assert (rows["cpr"]["colors"], rows["cpr"]["passes"]) == (3, 6)
    assert rows["dense forward"]["passes"] == 300 and rows["dense numeric"]["passes"] == 600
    assert all(r["error"] < 1e-7 for r in rows.values())
    code, out, _ = run(capsys, "compare", "broyden", "--dim", "50", "--sparse")
    assert code == 0 and "3 colours, 6 f-evals" in out


def test_compare_sparse_on_the_bratu_residual():
    rows = compare_sparse("bratu", n=64, methods=["coloured forward", "coloured reverse"], repeat=1)
    assert all(r["status"] == "ok" and r["error"] == 0.0 for r in rows)
    assert all(r["colors"] <= 8 for r in rows)
    assert np.isfinite(rows[0]["time_s"])


@pytest.mark.slow
def test_advise_recommends_a_coloured_jacobian_when_the_pattern_is_sparse():
    import diffkit as dk

    a = dk.advise("broyden", n=200, budget_s=20)  # (which is fastest is the machine's to say)
    coloured = {c.method: c for c in a.candidates}["coloured forward"]
    assert a.best is not None and coloured.status == "ok" and coloured.error < 1e-15
    assert a.facts["colors"] == 3
    assert any("3 colours" in r and "instead of 200" in r for r in a.reasons)
    dense = dk.advise("tanh_ax", n=6, budget_s=120)  # a dense 3 x 6 Jacobian: nothing to colour
    assert all(not c.method.startswith("coloured") for c in dense.candidates)
    assert any("saves no passes" in r for r in dense.reasons)
