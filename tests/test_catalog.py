"""The catalog: structure, evaluation, closed forms, and derivatives against references.

Forward and reverse derivatives of every entry are compared with
``diffkit.bench.reference.reference`` (exact SymPy derivatives evaluated at 40 digits), and a
few entries also with derivatives worked out by hand, so the catalog is checked against
something other than diffkit's own derivative rules.
"""
from __future__ import annotations

import doctest
import functools
import json
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import diffkit as dk
from diffkit.bench import catalog
from diffkit.bench.catalog import ENTRIES, Entry, get, names
from diffkit.bench.reference import reference
from diffkit.interpreters.symbolic import to_sympy

GROUPS = {"scalar", "optimization", "AD classics", "machine learning", "control flow",
          "vector-valued", "non-smooth", "iterative solvers"}
KINDS = {"derivative", "grad", "jacobian"}
# Entries whose default point is ON a kink, with diffkit's convention for the derivative
# there: 0 for abs and relu at 0; ties of maximum share 1/2 each: 1/2 * 1 + 1/2 * (-1) = 0.
KINKS = {"abs_kink": 0.0, "relu_kink": 0.0, "max_tie": 0.0}

RTOL, ATOL = 1e-10, 1e-12

by_name = pytest.mark.parametrize("entry", ENTRIES, ids=names())
SCALABLE = [e for e in ENTRIES if e.scalable]
WITH_DEPTH = [e for e in ENTRIES if e.depth is not None]
CLOSED = [e for e in ENTRIES if e.closed_form]
NOT_CLOSED = [e for e in ENTRIES if not e.closed_form]
ITERATIVE = [e for e in ENTRIES if e.group == "iterative solvers"]  # bench/iterative's references
SMOOTH_POINT = [e for e in ENTRIES if e.name not in KINKS and e not in ITERATIVE]


def differentiate(entry: Entry, f: Any, x: Any, backend: str) -> Any:
    """The derivative the entry asks for (its ``kind``), by ``backend``."""
    if entry.kind == "derivative":
        return dk.derivative(f, backend=backend)(x)
    if entry.kind == "grad":
        return dk.grad(f, backend=backend)(x)
    return dk.jacobian(f, backend=backend)(x)


def assert_rel(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Relative max-norm error ``max|a - e| / max|e| <= rtol``, with an absolute floor."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    assert np.all(np.isfinite(actual)), f"non-finite {actual}"
    err = float(np.max(np.abs(actual - expected)))
    tol = max(rtol * float(np.max(np.abs(expected))), atol)
    assert err <= tol, f"error {err:.3e} > {tol:.3e}\nactual={actual}\nexpected={expected}"


@functools.cache
def ref(name: str) -> Any:
    """The reference derivative of an entry at its default point (computed once)."""
    e = get(name)
    f, x = e.make()
    return reference(f, x, e.kind).derivative


# ================================================================ structure


def test_catalog_size_names_and_groups() -> None:
    assert len(ENTRIES) >= 32
    assert len(set(names())) == len(names())
    for n in names():
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", n), n
    assert {e.group for e in ENTRIES} == GROUPS
    for g in GROUPS:
        assert sum(e.group == g for e in ENTRIES) >= 4, g


def test_required_entries_present() -> None:
    required = {"rosenbrock", "beale", "booth", "himmelblau", "ackley", "rastrigin",
                "styblinski_tang", "griewank", "sum_of_squares", "speelpenning", "logistic_map",
                "nested_sin", "sin_product", "polynomial", "logistic_regression",
                "softmax_cross_entropy", "least_squares", "mlp_loss", "piecewise",
                "babylonian_sqrt", "newton_cbrt", "where_piecewise", "tanh_ax", "broyden",
                "polar_to_cartesian", "softmax", "abs_kink", "abs_near", "relu_kink",
                "relu_near", "max_tie"}
    assert required <= set(names())
    assert get("rosenbrock").fn is catalog._rosenbrock


@by_name
def test_fields_and_metadata(entry: Entry) -> None:
    assert entry.kind in KINDS
    assert entry.description and "\n" not in entry.description
    assert entry.domain and isinstance(entry.domain, str)
    assert isinstance(entry.closed_form, bool)
    meta = json.loads(json.dumps(entry.metadata()))
    assert meta["name"] == entry.name and meta["kind"] == entry.kind
    assert meta["group"] == entry.group and meta["closed_form"] == entry.closed_form
    assert meta["scalable"] == entry.scalable and meta["depth"] == entry.depth
    x = entry.point(entry.n)
    if entry.kind == "derivative":
        assert isinstance(x, float)
    else:
        assert isinstance(x, np.ndarray) and x.ndim == 1 and meta["dim"] == x.size
    if entry.scalable:
        assert entry.n >= 2 and meta["dim"] == entry.n


def test_points_are_fresh_copies() -> None:
    for e in ENTRIES:
        _, x = e.make()
        if isinstance(x, np.ndarray):
            x[...] = np.nan
            assert np.all(np.isfinite(e.make()[1])), e.name


def test_module_doctest() -> None:
    result = doctest.testmod(catalog)
    assert result.attempted >= 2 and result.failed == 0


def test_import_builds_no_data() -> None:
    code = ("import diffkit.bench.catalog as c; "
            "print(c._logreg_data.cache_info().currsize + c._lsq_data.cache_info().currsize "
            "+ c._mlp_data.cache_info().currsize + c._sce_data.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "0"


def test_data_is_fixed_seed() -> None:
    X1, y1 = catalog._logreg_data(5)
    catalog._logreg_data.cache_clear()
    X2, y2 = catalog._logreg_data(5)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert X1.shape == (50, 5) and set(np.unique(y1)) == {-1.0, 1.0}


# ================================================================ evaluation


def check_value(entry: Entry, f: Any, x: Any) -> None:
    v = np.asarray(f(x))
    assert np.all(np.isfinite(v)), f"{entry.name}: {v}"
    if entry.kind == "jacobian":
        assert v.ndim == 1 and v.size >= 2
    else:
        assert v.ndim == 0


@by_name
def test_make_evaluates(entry: Entry) -> None:
    if entry.name == "robertson":  # stiff: explicit integrators refuse it, in one line
        with pytest.raises(dk.NotApplicable, match="stiff") as err:
            entry.make()[0](entry.make()[1])
        assert "\n" not in str(err.value)
        return
    check_value(entry, *entry.make())


@pytest.mark.parametrize("n", [2, 5])
@pytest.mark.parametrize("entry", SCALABLE, ids=[e.name for e in SCALABLE])
def test_scalable(entry: Entry, n: int) -> None:
    f, x = entry.make(n=n)
    assert np.shape(x) == (n,)
    check_value(entry, f, x)


@pytest.mark.parametrize("entry", WITH_DEPTH, ids=[e.name for e in WITH_DEPTH])
def test_depth(entry: Entry) -> None:
    for k in range(1, 11):
        f, x = entry.make(depth=k)
        check_value(entry, f, x)
    f1, x = entry.make(depth=1)
    f3, _ = entry.make(depth=3)
    assert float(f1(x)) != float(f3(x))
    f_default, _ = entry.make()
    assert float(f_default(x)) == float(entry.make(depth=entry.depth)[0](x))


# ================================================================ closed forms


@pytest.mark.parametrize("entry", CLOSED, ids=[e.name for e in CLOSED])
def test_closed_form_traces(entry: Entry) -> None:
    f, x = entry.make()
    syms, expr = to_sympy(f, x)
    assert len(syms) == np.size(x)
    if entry.kind == "jacobian":
        assert np.ndim(expr) == 1
    else:
        assert np.ndim(expr) == 0


@pytest.mark.parametrize("entry", NOT_CLOSED, ids=[e.name for e in NOT_CLOSED])
def test_no_closed_form_symbolic_raises(entry: Entry) -> None:
    f, x = entry.make()
    with pytest.raises(dk.DiffkitError, match="closed form"):
        dk.grad(f, backend="symbolic")(x)


# ================================================================ derivatives vs references


@pytest.mark.parametrize("entry", [e for e in ITERATIVE if e.name != "robertson"],
                         ids=lambda e: e.name)
def test_iterative_entries_match_their_exact_gradients(entry: Entry) -> None:
    from diffkit.bench.iterative import exact_gradient

    f, x = entry.make()
    expected = exact_gradient(entry.name, x)
    for backend in ("forward", "reverse"):
        np.testing.assert_allclose(dk.grad(f, backend=backend)(x), expected, rtol=1e-7,
                                   atol=1e-10)


@pytest.mark.parametrize("entry", SMOOTH_POINT, ids=[e.name for e in SMOOTH_POINT])
def test_forward_reverse_match_reference(entry: Entry) -> None:
    f, x = entry.make()
    expected = ref(entry.name)
    for backend in ("forward", "reverse"):
        assert_rel(differentiate(entry, f, x, backend), expected)


SMALL_SCALABLE = [e for e in SCALABLE if e.group != "machine learning"]


@pytest.mark.parametrize("entry", SMALL_SCALABLE, ids=[e.name for e in SMALL_SCALABLE])
def test_scalable_at_other_n_match_reference(entry: Entry) -> None:
    f, x = entry.make(n=3)
    expected = reference(f, x, entry.kind).derivative
    for backend in ("forward", "reverse"):
        assert_rel(differentiate(entry, f, x, backend), expected)


@pytest.mark.parametrize("entry", WITH_DEPTH, ids=[e.name for e in WITH_DEPTH])
def test_depths_match_reference(entry: Entry) -> None:
    for k in (1, 3, 7):
        f, x = entry.make(depth=k)
        expected = reference(f, x, entry.kind).derivative
        for backend in ("forward", "reverse"):
            assert_rel(differentiate(entry, f, x, backend), expected)


def test_elementwise_entries_on_arrays() -> None:
    """Derivative entries run on arrays of points too (all but the if/elif piecewise)."""
    for e in ENTRIES:
        if e.kind != "derivative" or e.name == "piecewise":
            continue
        f, x0 = e.make()
        xs = np.array([x0, x0 * 1.25 + 0.125])
        expected = reference(f, xs, "derivative").derivative
        for backend in ("forward", "reverse"):
            assert_rel(differentiate(e, f, xs, backend), expected)


@pytest.mark.parametrize("name", sorted(KINKS))
def test_kink_conventions(name: str) -> None:
    e = get(name)
    f, x = e.make()
    for backend in ("forward", "reverse"):
        assert float(differentiate(e, f, x, backend)) == KINKS[name]
    assert float(ref(name)) == KINKS[name]  # the reference uses the same convention here


@pytest.mark.parametrize("name", ["abs_near", "relu_near", "max_near"])
def test_near_kink_is_smooth_side(name: str) -> None:
    e = get(name)
    f, x = e.make()
    assert 0 < x - (0.5 if name == "max_near" else 0.0) <= 1e-7
    for backend in ("forward", "reverse"):
        assert float(differentiate(e, f, x, backend)) == 1.0


# ================================================================ hand-derived derivatives


def both(entry_name: str, **make: Any) -> tuple[Any, list[Any]]:
    e = get(entry_name)
    f, x = e.make(**make)
    return x, [differentiate(e, f, x, b) for b in ("forward", "reverse")]


def test_rosenbrock_hand_gradient() -> None:
    for n in (2, 5):
        x, ds = both("rosenbrock", n=n)
        g = np.zeros_like(x)
        g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
        g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
        for d in ds:
            assert_rel(d, g)


def test_speelpenning_hand_gradient() -> None:
    x, ds = both("speelpenning")
    for d in ds:
        assert_rel(d, np.prod(x) / x)


def test_babylonian_sqrt_hand_derivative() -> None:
    a, ds = both("babylonian_sqrt")
    for d in ds:
        assert_rel(d, 1.0 / (2.0 * np.sqrt(a)))
    f, _ = get("babylonian_sqrt").make()
    a = np.array([0.25, 2.0, 9.0, 1e4])
    assert_rel(f(a), np.sqrt(a), rtol=1e-12)
    assert_rel(dk.derivative(f)(a), 0.5 / np.sqrt(a))


def test_newton_cbrt_hand_derivative() -> None:
    a, ds = both("newton_cbrt")
    for d in ds:
        assert_rel(d, 1.0 / (3.0 * a ** (2.0 / 3.0)))


def test_recursive_exp_is_exp() -> None:
    f, _ = get("recursive_exp").make()
    x = np.array([-3.0, -0.2, 0.4, 1.3, 5.0])
    assert_rel(f(x), np.exp(x), rtol=1e-13)
    for backend in ("forward", "reverse"):
        assert_rel(dk.derivative(f, backend=backend)(x), np.exp(x), rtol=1e-12)


def test_logistic_map_chain_rule() -> None:
    for k in (1, 4, 7):
        x, ds = both("logistic_map", depth=k)
        chain, lk = 1.0, x
        for _ in range(k):
            chain *= 4.0 - 8.0 * lk
            lk = 4.0 * lk * (1.0 - lk)
        for d in ds:
            assert_rel(d, chain)


def test_nested_sin_and_polynomial_hand_derivatives() -> None:
    x, ds = both("nested_sin", depth=6)
    chain, s = 1.0, x
    for _ in range(6):
        chain *= np.cos(s)
        s = np.sin(s)
    for d in ds:
        assert_rel(d, chain)
    x, ds = both("polynomial", depth=8)
    for d in ds:
        assert_rel(d, sum(j * x ** (j - 1) for j in range(1, 9)))


def test_scalar_classics_hand_derivatives() -> None:
    hand = {"exp": np.exp, "sin_small": np.cos, "sin_large": np.cos,
            "cbrt_near_zero": lambda x: x ** (-2 / 3) / 3, "log_near_zero": lambda x: 1 / x,
            "runge": lambda x: -50 * x / (1 + 25 * x ** 2) ** 2,
            "exp_sin_20x": lambda x: 20 * np.cos(20 * x) * np.exp(np.sin(20 * x)),
            "tanh": lambda x: 1 - np.tanh(x) ** 2,
            "sigmoid": lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2}
    for name, d in hand.items():
        x, ds = both(name)
        for got in ds:
            assert_rel(got, d(x), rtol=1e-14 * 8)


def test_least_squares_and_logistic_regression_hand_gradients() -> None:
    x, ds = both("least_squares")
    A, b = catalog._lsq_data(x.size)
    for d in ds:
        assert_rel(d, A.T @ (A @ x - b))
    w, ds = both("logistic_regression")
    X, y = catalog._logreg_data(w.size)
    g = X.T @ (-y / (1.0 + np.exp(y * (X @ w)))) / len(y)
    for d in ds:
        assert_rel(d, g)


def test_vector_valued_hand_jacobians() -> None:
    x, ds = both("softmax")
    s = np.exp(x) / np.sum(np.exp(x))
    for d in ds:
        assert_rel(d, np.diag(s) - np.outer(s, s))
    x, ds = both("polar_to_cartesian")
    r, t = x
    for d in ds:
        assert_rel(d, [[np.cos(t), -r * np.sin(t)], [np.sin(t), r * np.cos(t)]])
    x, ds = both("broyden")
    n = x.size
    jac = np.diag(3.0 - 4.0 * x) - np.eye(n, k=-1) - 2.0 * np.eye(n, k=1)
    for d in ds:
        assert_rel(d, jac)
    x, ds = both("tanh_ax")
    A = np.random.default_rng(0).normal(size=(3, x.size)) / np.sqrt(x.size)  # fixed seed
    for d in ds:
        assert_rel(d, (1.0 - np.tanh(A @ x) ** 2)[:, None] * A)


def test_where_piecewise_matches_piecewise() -> None:
    fi, _ = get("piecewise").make()
    fw, _ = get("where_piecewise").make()
    pts = [-1.5, -1e-3, 0.25, 0.5, 0.999, 1.0, 1.5, 4.0]
    def exact(x: float) -> float:  # exp, 1 + sin, 1 + sin(1) + log: their slopes by hand
        return np.exp(x) if x < 0 else np.cos(x) if x < 1 else 1.0 / x

    for x in pts:
        assert float(fw(x)) == pytest.approx(float(fi(x)), rel=1e-15)
        for backend in ("forward", "reverse"):
            for f in (fw, fi):
                assert float(dk.derivative(f, backend=backend)(x)) == pytest.approx(
                    exact(x), rel=1e-14)
    # branch-free: one vectorised pass, no NaN leaking from the branch not taken
    xs = np.array(pts + [0.0])
    for backend in ("forward", "reverse"):
        d = dk.derivative(fw, backend=backend)(xs)
        assert np.all(np.isfinite(d))


# ================================================================ errors


def test_unknown_name_suggests() -> None:
    with pytest.raises(dk.DiffkitError, match="rosenbrock"):
        get("rosenbruck")


def test_make_rejects_inapplicable_parameters() -> None:
    with pytest.raises(dk.DiffkitError, match="fixed input dimension"):
        get("beale").make(n=3)
    with pytest.raises(dk.DiffkitError, match="fixed input dimension"):
        get("exp").make(n=3)
    with pytest.raises(dk.DiffkitError, match="no depth"):
        get("rosenbrock").make(depth=3)
    with pytest.raises(dk.DiffkitError, match="no depth"):
        get("softmax").make(depth=2)


def test_make_rejects_bad_sizes() -> None:
    with pytest.raises(dk.DiffkitError, match="depth must be"):
        get("logistic_map").make(depth=0)
    with pytest.raises(dk.DiffkitError, match="dimension must be"):
        get("rosenbrock").make(n=1)


def test_values_are_plain_numpy() -> None:
    """Called on plain arrays, catalog functions give numpy values (no boxes, no sympy)."""
    for e in ENTRIES:
        f, x = e.make()
        if e.name != "robertson":  # refused (test_make_evaluates)
            assert isinstance(f(x), (float, np.floating, np.ndarray)), e.name
