"""The harness's iterative problems (bench/iterative.py), the report's solvers section and
advise on solvers: every way of differentiating a solver against the exact gradient."""

from __future__ import annotations

import pytest

from diffkit.bench.iterative import measure, sweep


def test_sweep_unrolled_error_falls_with_iterations_implicit_memory_flat() -> None:
    rows = sweep("fixed_point_sqrt", [5, 40], repeat=1)
    by = {(r["way"], r["steps"]): r for r in rows}
    assert by["unrolled", 40]["error"] < by["unrolled", 5]["error"]
    assert by["unrolled", 40]["peak_bytes"] > 2 * by["unrolled", 5]["peak_bytes"]
    assert by["implicit", 40]["peak_bytes"] < 1.5 * by["implicit", 5]["peak_bytes"]


@pytest.mark.parametrize("way", ("discrete", "continuous"))
def test_rk4_sweep_error_falls_like_h4(way: str) -> None:
    errors = [measure("logistic_ode", way, n, repeat=1)["error"] for n in (20, 40)]
    assert 8 < errors[0] / errors[1] < 32  # RK4: error ~ h⁴, so halving h gives ~16


def test_report_solvers_section(tmp_path) -> None:
    from diffkit.reporting import report, solvers

    spec = report.load_spec({"figures": ["steps"], "solvers": {
        "functions": ["newton_cubic", "logistic_ode"], "iterations": [2, 8],
        "rk4_steps": [10, 20]}})
    solved = [r for _, work in solvers.units(spec["solvers"]) for r in work()]
    assert {(r["function"], r["steps"]) for r in solved} == {
        ("newton_cubic", 2), ("newton_cubic", 8), ("logistic_ode", 10), ("logistic_ode", 20)}
    assert all(r["status"] == "ok" for r in solved)
    png = solvers.draw(solved, tmp_path)
    assert png.stat().st_size > 10_000
    html = report.page(spec, {}, "diffkit report x", tmp_path / "results.jsonl", (), solved)
    assert solvers.TITLE in html and "data:image/png;base64," in html
    with pytest.raises(Exception, match="iterative functions"):
        report.load_spec({"solvers": {"functions": ["rosenbrock"]}})
    with pytest.raises(Exception, match="positive integers"):
        report.load_spec({"solvers": {"functions": ["newton_cubic"], "iterations": [0]}})


def test_advise_knows_the_ways_of_a_solver() -> None:
    import diffkit as dk

    a = dk.advise("newton_cubic", budget_s=120)  # a busy machine must not skip methods
    ways = {r["way"]: r for r in a.facts["solver_ways"]}
    assert set(ways) == {"implicit", "unrolled"}
    assert all(r["error"] < 1e-12 for r in ways.values())
    sentence = next(r for r in a.reasons if r.startswith("f iterates"))
    assert "--solver all" in sentence and "implicit" in sentence
