"""Evaluation traces against the hand-computed textbook example f = ln x1 + x1 x2 − sin x2."""

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp


def f(x1, x2):
    return dnp.log(x1) + x1 * x2 - dnp.sin(x2)


# Baydin, Pearlmutter, Radul and Siskind (2018), "Automatic differentiation in machine
# learning: a survey", JMLR 18(153). Table 2: the forward primal and tangent traces of
# f(x1, x2) = ln(x1) + x1 x2 − sin(x2) at (2, 5), seeded with ẋ1 = 1; Table 3: the reverse
# adjoint trace. Every number as printed there (3 decimals).
TABLE_2 = [  # var, definition, primal value, tangent
    ("v-1", "x1", 2.0, 1.0), ("v0", "x2", 5.0, 0.0), ("v1", "ln v-1", 0.693, 0.5),
    ("v2", "v-1 × v0", 10.0, 5.0), ("v3", "sin v0", -0.959, 0.0),
    ("v4", "v1 + v2", 10.693, 5.5), ("v5", "v4 − v3", 11.652, 5.5)]
TABLE_3 = [  # the adjoint trace: updated adjoint, through which variable, its value then
    ("v̄4", "v5", 1.0), ("v̄3", "v5", -1.0), ("v̄1", "v4", 1.0), ("v̄2", "v4", 1.0),
    ("v̄0", "v3", -0.284), ("v̄-1", "v2", 5.0), ("v̄0", "v2", 1.716), ("v̄-1", "v1", 5.5)]


def test_the_forward_trace_is_baydins_table_2_cell_by_cell():
    t = dk.trace(f, 2.0, 5.0)
    assert len(t.rows) == len(TABLE_2)
    for row, (var, formula, value, tangent) in zip(t.rows, TABLE_2):
        assert (row["var"], row["formula"]) == (var, formula)
        assert float(row["value"]) == pytest.approx(value, abs=5e-4)
        assert float(row["tangent"]) == pytest.approx(tangent, abs=5e-4)
    values = [2, 5, np.log(2), 10, np.sin(5), np.log(2) + 10, np.log(2) + 10 - np.sin(5)]
    np.testing.assert_allclose([r["value"] for r in t.rows], values, rtol=1e-15)
    t2 = dk.trace(f, 2.0, 5.0, seed=(0.0, 1.0))
    assert t2.rows[-1]["tangent"] == pytest.approx(2 - np.cos(5), rel=1e-15)


def test_the_reverse_trace_is_baydins_table_3_cell_by_cell():
    t = dk.trace(f, 2.0, 5.0, mode="reverse")
    assert [(r["var"], r["formula"]) for r in t.rows] == [(v, d) for v, d, _, _ in TABLE_2]
    adj = {r["var"]: r["adjoint"] for r in t.rows}
    assert adj["v-1"] == pytest.approx(0.5 + 5, rel=1e-15)   # x̄1 = 1/x1 + x2
    assert adj["v0"] == pytest.approx(2 - np.cos(5), rel=1e-15)  # x̄2 = x1 − cos x2
    steps = t.adjoint_rows
    assert len(steps) == len(TABLE_3)
    for step, (bar, through, total) in zip(steps, TABLE_3):
        assert step["update"].startswith(f"{bar} += ∂{through}/")
        assert float(step["total"]) == pytest.approx(total, abs=5e-4)
    into_x1 = [s for s in steps if s["update"].startswith("v\u0304-1")]
    assert [float(s["contribution"]) for s in into_x1] == [5.0, 0.5]  # x1 is used twice
    text = str(t)
    assert "reverse sweep" in text and "v\u03041" in text
    page = t._repr_html_()
    assert page.count("<table>") == 2 and "reverse sweep" in page and "v\u03041" in page
    assert len(t.records()) == 7 + 8


def test_python_evaluation_order_numbers_differently_with_the_same_numbers():
    """Python evaluates ln x1 + x1 x2 before sin x2; any order in which operands come
    first gives the same values, tangents and adjoints."""
    textbook, python = dk.trace(f, 2.0, 5.0), dk.trace(f, 2.0, 5.0, order="evaluation")
    assert [r["op"] for r in python.rows] == ["input", "input", "log", "mul", "add", "sin", "sub"]
    assert [r["inputs"] for r in python.rows[2:]] == ["v-1", "v-1, v0", "v1, v2", "v0", "v3, v4"]
    by_formula = {r["op"]: (r["value"], r["tangent"]) for r in textbook.rows[2:]}
    for r in python.rows[2:]:
        assert (r["value"], r["tangent"]) == by_formula[r["op"]]
    rev = dk.trace(f, 2.0, 5.0, mode="reverse", order="evaluation")
    assert [s["rule"] for s in rev.adjoint_rows] == ["sub", "sub", "sin", "add", "add", "mul",
                                                     "mul", "log"]
    with pytest.raises(ValueError, match="order must be"):
        dk.trace(f, 1.0, 2.0, order="alphabetical")


def test_trace_of_arrays_and_a_bad_mode():
    t = dk.trace(lambda x: dnp.sum(x * x), np.array([1.0, 2.0]), mode="reverse")
    np.testing.assert_allclose(t.rows[0]["adjoint"], [2.0, 4.0])
    with pytest.raises(ValueError, match="mode must be"):
        dk.trace(f, 1.0, 2.0, mode="sideways")


def test_traces_of_a_joint_rule_and_of_a_big_array():
    """stack/concatenate has one joint JVP rule (the old copy of forward mode ignored it
    and raised IndexError); a trace keeps big arrays whole (the tape would hollow them)."""
    g = lambda x: dnp.sum(dnp.stack([x, 2 * x]))  # noqa: E731
    fwd = dk.trace(g, 1.0)
    assert [r["op"] for r in fwd.rows] == ["input", "mul", "reshape", "reshape", "concatenate",
                                           "sum"]
    assert float(fwd.rows[-1]["tangent"]) == 3.0  # d/dx (x + 2x)
    rev = dk.trace(g, 1.0, mode="reverse")
    assert float(rev.rows[0]["adjoint"]) == 3.0
    big = np.linspace(0.0, 1.0, 20_000)  # 160 kB: above the tape's hollowing threshold
    t = dk.trace(lambda x: dnp.sum(dnp.exp(x)), big, mode="reverse")
    np.testing.assert_allclose(t.rows[1]["value"], np.exp(big))
    np.testing.assert_allclose(t.rows[0]["adjoint"], np.exp(big))
