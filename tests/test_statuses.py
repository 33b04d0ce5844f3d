"""Statuses a script can rely on: an error above what the method promises is `inaccurate`,
a point with no derivative is `kink`, both exit 1, and neither is ever recommended."""

import json

import numpy as np
import pytest
import sympy as sp

import diffkit as dk
from diffkit.bench.kinks import kink
from diffkit.reporting.which import agreement
from test_cli import run

BAR = [  # the commands: each printed `ok` beside an error far above the method's
    ("abs_near", ["--backends", "numeric[method=complex],numeric,forward"]),
    ("sign(x)", ["--at", "x=0"]),
    ("relu_kink", []),
]


@pytest.mark.parametrize("func, extra", BAR)
def test_no_ok_beside_an_error_above_the_promise(capsys, func, extra):
    code, out, err = run(capsys, "compare", func, *extra, "--repeat", "1", "--format", "json")
    assert code == 1, err
    rows = json.loads(out)
    for r in rows:
        if r["status"] == "ok":
            assert r["error"] <= r["tolerance"], r
        else:
            assert r["status"] in ("inaccurate", "kink"), r
    assert any(r["status"] != "ok" for r in rows)


def test_abs_near_judges_each_method_against_its_own_promise(capsys):
    """At x = 1e-8 |x|' = 1: the complex step gives 0 (abs is not analytic), central
    differences straddle the kink; forward mode is exact."""
    code, out, _ = run(capsys, "compare", "abs_near", "--backends",
                       "numeric[method=complex],numeric,forward", "--repeat", "1",
                       "--format", "json")
    rows = {r["backend"]: r for r in json.loads(out)}
    assert code == 1
    assert rows["numeric[method=complex]"]["status"] == "inaccurate"
    assert rows["numeric[method=complex]"]["error"] == pytest.approx(1.0)
    assert rows["numeric"]["status"] == "inaccurate"
    assert "above 1e-05, what this method promises" in rows["numeric"]["message"]
    assert rows["forward"]["status"] == "ok" and rows["forward"]["derivative"] == 1.0


def test_kink_cells_are_all_kink(capsys):
    code, out, _ = run(capsys, "compare", "sign(x)", "--at", "x=0", "--repeat", "1",
                       "--format", "json")
    rows = json.loads(out)
    assert code == 1 and {r["status"] for r in rows} == {"kink"}
    assert "f has no derivative at x = 0 (sign(x) at x = 0)" in rows[0]["message"]


def test_user_rtol_decides(capsys):
    """Central differences on sin at 1 are ~1e-11 off: ok at rtol 1e-6, inaccurate at 1e-14."""
    args = ["compare", "sin(x)", "--at", "x=1", "--backends", "numeric,forward", "--repeat",
            "1", "--format", "json"]
    code, out, _ = run(capsys, *args, "--rtol", "1e-6")
    assert code == 0 and {r["status"] for r in json.loads(out)} == {"ok"}
    code, out, _ = run(capsys, *args, "--rtol", "1e-14")
    rows = {r["backend"]: r for r in json.loads(out)}
    assert code == 1 and rows["numeric"]["status"] == "inaccurate"
    assert "the --rtol given" in rows["numeric"]["message"]
    assert rows["forward"]["status"] == "ok"  # cos(1) to the last bit


def test_the_table_shows_the_status(capsys):
    code, out, _ = run(capsys, "compare", "relu_kink", "--backends", "numeric,reverse",
                       "--repeat", "1")
    assert code == 1 and " ok " not in out and out.count("kink") >= 2


x, y = sp.symbols("x y", real=True)


@pytest.mark.parametrize("expr, point, found", [
    (sp.Abs(x), {x: 0.0}, "Abs(x) at x = 0"),
    (sp.Abs(x), {x: 1e-8}, ""),
    (sp.Max(x, 1 - x), {x: 0.5}, "tie"),
    (sp.Max(x, 1 - x), {x: 0.5 + 1e-8}, ""),
    (sp.floor(x) + x, {x: 2.0}, "floor(x) at x = 2"),
    (sp.Piecewise((x, x > 0), (0, True)), {x: 0.0}, "boundary"),
    (sp.Piecewise((x ** 2, x > 0), (0, True)), {x: 0.0}, ""),  # meets at slope 0: smooth
    (sp.Min(x, y) + sp.sin(x), {x: 1.0, y: 1.0}, "tie"),
])
def test_kink_finds_points_without_a_derivative(expr, point, found):
    got = kink([expr], point, 30)
    assert (found in got and got) if found else got == ""


def test_which_table_never_recommends_an_inaccurate_or_kink_cell():
    rows = [{"backend": "numeric", "status": "inaccurate", "error": 1e-3, "time_s": 1e-7},
            {"backend": "symbolic", "status": "kink", "error": 0.0, "time_s": 1e-7},
            {"backend": "reverse", "status": "ok", "error": 1e-16, "time_s": 1e-5}]
    row = agreement({"function": "f", "recommended": "numeric", "runner_up": "symbolic"},
                    rows, 1.0, 100)
    assert row["measured best"] == "reverse" and row["agreed"] == "no"


def test_every_backend_states_its_promise():
    assert dk.backend("forward").tolerance("grad") == 1e-8
    assert dk.backend("numeric", method="complex").tolerance("grad") == 1e-10
    assert dk.backend("numeric").tolerance("hessian") > dk.backend("numeric").tolerance("grad")
    assert np.isfinite(dk.backend("numeric", method="forward").tolerance("derivative"))
