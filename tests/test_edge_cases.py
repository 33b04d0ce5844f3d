"""Numerical edge cases: every backend gives the result docs/edge-cases.md documents.

The table in ``docs/edge-cases.md`` is the specification: for each case (a function at a
point on a domain edge, a kink, a pole, an overflow, an unselected NaN branch ...) it gives
what ``dk.grad`` returns with each backend, and whether numpy warns (⚠, a RuntimeWarning).
This file parses that table and checks every cell against what diffkit does, so the
document cannot drift from the code: no crash, no undocumented answer, and where backends
differ the row must carry a note saying why.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp

DOC = Path(__file__).resolve().parent.parent / "docs" / "edge-cases.md"
BACKENDS = ("symbolic", "numeric", "forward", "reverse")
WARN = "⚠"

# id -> (expression in x, point). The doc's table repeats both; the test checks they match.
CASES = {
    "sqrt_at_0": ("dnp.sqrt(x)", 0.0),
    "log_at_0": ("dnp.log(x)", 0.0),
    "log_below_0": ("dnp.log(x)", -1.0),
    "log1p_at_-1": ("dnp.log1p(x)", -1.0),
    "arcsin_at_1": ("dnp.arcsin(x)", 1.0),
    "sqrt_of_square_at_0": ("dnp.sqrt(x * x)", 0.0),
    "norm_at_0": ("dnp.sqrt(dnp.sum(x * x))", [0.0, 0.0]),
    "reciprocal_at_0": ("1.0 / x", 0.0),
    "x_over_x_at_0": ("x / x", 0.0),
    "exp_overflow": ("dnp.exp(x)", 710.0),
    "cosh_overflow": ("dnp.cosh(x)", 1000.0),
    "tanh_saturated": ("dnp.tanh(x)", 1000.0),
    "sigmoid_far_left": ("dnp.sigmoid(x)", -800.0),
    "logsumexp_large": ("dnp.logsumexp(x)", [800.0, 799.0]),
    "abs_at_0": ("dnp.abs(x)", 0.0),
    "relu_at_0": ("dnp.relu(x)", 0.0),
    "maximum_tie": ("dnp.maximum(x, 0.0)", 0.0),
    "maximum_of_x_and_x": ("dnp.maximum(x, x)", 1.0),
    "max_reduction_tie": ("dnp.max(x)", [1.0, 1.0]),
    "clip_at_upper_bound": ("dnp.clip(x, -1.0, 1.0)", 1.0),
    "sign_at_0": ("dnp.sign(x)", 0.0),
    "where_nan_branch": ("dnp.where(x > 0, dnp.sqrt(x), 0.0)", -1.0),
    "where_inf_branch": ("dnp.where(x > 0, 1.0 / x, 0.0)", 0.0),
    "where_finite_branches": ("dnp.where(x > 0, dnp.log(x), x)", -1.0),
    "double_where": ("dnp.where(x > 0, dnp.sqrt(dnp.where(x > 0, x, 1.0)), 0.0)", -1.0),
    "double_where_at_threshold": ("dnp.where(x > 0, dnp.sqrt(dnp.where(x > 0, x, 1.0)), 0.0)", 0.0),
    "cube_of_negative": ("x ** 3", -2.0),
    "square_of_negative": ("x ** 2", -2.0),
    "inverse_of_negative": ("x ** -1", -2.0),
    "float_cube_of_negative": ("dnp.power(x, 3.0)", -2.0),
    "fractional_power_of_negative": ("x ** 2.5", -2.0),
    "zeroth_power_at_0": ("x ** 0", 0.0),
    "half_power_at_0": ("x ** 0.5", 0.0),
    "x_to_the_x_at_0": ("x ** x", 0.0),
    "traced_exponent_negative_base": ("x[0] ** x[1]", [-2.0, 2.0]),
    "prod_with_a_zero": ("dnp.prod(x)", [0.0, 2.0, 3.0]),
    "prod_with_two_zeros": ("dnp.prod(x)", [0.0, 0.0, 3.0]),
    "nan_input": ("dnp.sin(x)", float("nan")),
    "inf_input": ("dnp.exp(x)", float("inf")),
}


def function(expr: str):
    return eval(f"lambda x: {expr}", {"dnp": dnp, "np": np})  # the table's own text


def observe(expr: str, x, backend: str) -> str:
    """What ``dk.grad`` gives, as the doc writes it: value(s), ⚠ if numpy warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            g = dk.grad(function(expr), backend=backend)(np.asarray(x, dtype=float))
        except Exception as exc:  # noqa: BLE001  (a crash would be documented as such)
            return f"error: {type(exc).__name__}"
    warned = any(issubclass(w.category, RuntimeWarning) for w in caught)
    return fmt(g) + (f" {WARN}" if warned else "")


def fmt(v) -> str:
    v = np.asarray(v, dtype=float)
    if v.ndim:
        return "[" + ", ".join(fmt(e) for e in v) + "]"
    return f"{float(v):.6g}"


def parse_doc() -> dict[str, dict[str, str]]:
    """The rows of the edge-case table: id -> {expr, x, symbolic, numeric, forward, reverse, note}."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", m.group(2))]
        if len(cells) != 7:
            continue
        expr, x, *results, note = cells
        rows[m.group(1)] = {"expr": expr.strip("`"), "x": x.strip("`"),
                            **dict(zip(BACKENDS, results)), "note": note}
    return rows


def same(documented: str, observed: str) -> bool:
    """Cells agree: the same warning mark, the same numbers (to the 6 digits printed)."""
    d_warn, o_warn = documented.endswith(WARN), observed.endswith(WARN)
    d, o = documented.rstrip(WARN).strip(), observed.rstrip(WARN).strip()
    if d_warn != o_warn:
        return False
    if d.startswith("error") or o.startswith("error"):
        return d == o
    dv = [float(t) for t in d.strip("[]").split(",")]
    ov = [float(t) for t in o.strip("[]").split(",")]
    return len(dv) == len(ov) and all(
        (np.isnan(a) and np.isnan(b)) or a == b or abs(a - b) <= 1e-5 * abs(a) for a, b in zip(dv, ov))


DOCUMENTED = parse_doc() if DOC.exists() else {}


def test_the_doc_lists_exactly_the_tested_cases():
    assert DOCUMENTED, f"no edge-case table found in {DOC}"
    assert set(DOCUMENTED) == set(CASES)
    for case, (expr, x) in CASES.items():
        assert DOCUMENTED[case]["expr"] == expr, case
        assert DOCUMENTED[case]["x"] == fmt(x), case


@pytest.mark.parametrize("case", list(CASES))
def test_each_backend_gives_the_documented_result(case):
    expr, x = CASES[case]
    row = DOCUMENTED[case]
    observed = {b: observe(expr, x, b) for b in BACKENDS}
    wrong = {b: (row[b], observed[b]) for b in BACKENDS if not same(row[b], observed[b])}
    assert not wrong, f"{case}: documented vs observed: {wrong}"
    assert not any(o.startswith("error") for o in observed.values()), "a crash"


@pytest.mark.parametrize("case", list(CASES))
def test_backends_that_differ_are_explained(case):
    """No silent disagreement: a row whose backends give different numbers has a note."""
    row = DOCUMENTED[case]
    values = {row[b].rstrip(WARN).strip() for b in BACKENDS}
    if len(values) > 1:
        assert len(row["note"]) >= 10, f"{case}: backends differ ({values}) without a note"


def test_non_finite_results_are_never_silent():
    """An inf or NaN derivative from a finite input always comes with a RuntimeWarning:
    the doc has no silent non-finite cell for finite inputs."""
    for case, (expr, x) in CASES.items():
        if not np.all(np.isfinite(x)):
            continue
        for b in BACKENDS:
            cell = DOCUMENTED[case][b]
            if re.search(r"\b(nan|inf)\b", cell):
                assert cell.endswith(WARN), f"{case}/{b}: silent {cell}"


# ----------------------------------------------------------------------------- the double-where trap


def test_double_where_trap_leaks_nan_only_into_reverse_mode():
    """As in JAX and PyTorch: the unselected branch's derivative is multiplied by a zero
    adjoint in reverse mode, and 0 * nan = nan. Forward mode multiplies by the zero of
    where's own JVP rule after the branch, so its tangent stays 0."""
    trap = function("dnp.where(x > 0, dnp.sqrt(x), 0.0)")
    x = np.array([-1.0, 4.0])
    with pytest.warns(RuntimeWarning):  # sqrt(-1) in the forward pass
        g_rev = dk.grad(lambda v: dnp.sum(trap(v)))(x)
    assert np.isnan(g_rev[0]) and g_rev[1] == 0.25
    with pytest.warns(RuntimeWarning):
        g_fwd = dk.grad(lambda v: dnp.sum(trap(v)), backend="forward")(x)
    np.testing.assert_array_equal(g_fwd, [0.0, 0.25])


def test_double_where_idiom_fixes_it_everywhere():
    safe = function("dnp.where(x > 0, dnp.sqrt(dnp.where(x > 0, x, 1.0)), 0.0)")
    x = np.array([-1.0, 4.0])
    for b in ("forward", "reverse", "numeric"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # not even a warning
            np.testing.assert_array_equal(dk.grad(lambda v: dnp.sum(safe(v)), backend=b)(x)[0], 0.0)
    h = dk.hessian(lambda v: dnp.sum(safe(v)))(x)  # second order too
    np.testing.assert_allclose(h, [[0.0, 0.0], [0.0, -1 / 32]])


# ----------------------------------------------------------------------------- float32


def test_float32_inputs():
    """AD keeps float32 (computes and returns it); symbolic and numeric compute in float64
    and return float64. All agree to float32 precision (documented in the doc)."""
    f = function("dnp.sum(dnp.sin(x) * x)")
    x32 = np.array([0.5, 1.5], dtype=np.float32)
    exact = np.sin(x32.astype(float)) + x32.astype(float) * np.cos(x32.astype(float))
    dtypes = {}
    for b in BACKENDS:
        g = dk.grad(f, backend=b)(x32)
        dtypes[b] = g.dtype
        np.testing.assert_allclose(g, exact, rtol=4 * np.finfo(np.float32).eps)
    assert dtypes == {"symbolic": np.float64, "numeric": np.float64, "forward": np.float32,
                      "reverse": np.float32}
    assert dk.grad(dnp.sin, backend="reverse")(np.float32(0.5)).dtype == np.float32
    assert dk.hessian(f)(x32).dtype == np.float32
    assert dk.jacobian(dnp.sin, backend="forward")(x32).dtype == np.float32
    assert "float32" in DOC.read_text()


def test_float32_overflow_is_earlier_and_documented():
    """exp(100) overflows in float32 (max ~3.4e38) but not in float64: AD on float32
    input gives inf with a RuntimeWarning; symbolic and numeric (float64) do not."""
    x = np.float32(100.0)
    with pytest.warns(RuntimeWarning):
        assert np.isinf(dk.grad(dnp.exp, backend="forward")(x))
    assert np.isfinite(dk.grad(dnp.exp, backend="symbolic")(x))
    assert "exp(100)" in DOC.read_text()
