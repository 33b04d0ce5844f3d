"""Evaluation traces against the hand-computed textbook example f = ln x1 + x1 x2 − sin x2."""

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp


def f(x1, x2):
    return dnp.log(x1) + x1 * x2 - dnp.sin(x2)


def test_forward_trace_rows_match_hand_computation():
    t = dk.trace(f, 2.0, 5.0)
    assert [r["var"] for r in t.rows] == ["v-1", "v0", "v1", "v2", "v3", "v4", "v5"]
    assert [r["inputs"] for r in t.rows[2:]] == ["v-1", "v-1, v0", "v1, v2", "v0", "v3, v4"]
    values = [2, 5, np.log(2), 10, np.log(2) + 10, np.sin(5), np.log(2) + 10 - np.sin(5)]
    tangents = [1, 0, 0.5, 5, 5.5, 0, 5.5]  # seed: d/dx1
    np.testing.assert_allclose([r["value"] for r in t.rows], values, rtol=1e-15)
    np.testing.assert_allclose([r["tangent"] for r in t.rows], tangents, rtol=1e-15)
    t2 = dk.trace(f, 2.0, 5.0, seed=(0.0, 1.0))
    assert t2.rows[-1]["tangent"] == pytest.approx(2 - np.cos(5), rel=1e-15)


def test_reverse_trace_shows_each_contribution_in_backward_order():
    t = dk.trace(f, 2.0, 5.0, mode="reverse")
    adj = {r["var"]: r["adjoint"] for r in t.rows}
    assert adj["v-1"] == pytest.approx(0.5 + 5, rel=1e-15)
    assert adj["v0"] == pytest.approx(2 - np.cos(5), rel=1e-15)
    steps = t.adjoint_rows
    assert [s["rule"] for s in steps] == ["sub", "sub", "sin", "add", "add", "mul", "mul", "log"]
    into_x1 = [s for s in steps if s["update"].startswith("v\u0304-1")]
    assert [float(s["contribution"]) for s in into_x1] == [5.0, 0.5]  # x1 is used twice
    assert float(into_x1[-1]["total"]) == 5.5
    text = str(t)
    assert "reverse sweep" in text and "v\u03041" in text
    page = t._repr_html_()
    assert page.count("<table>") == 2 and "reverse sweep" in page and "v\u03041" in page
    assert len(t.records()) == 7 + 8


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
