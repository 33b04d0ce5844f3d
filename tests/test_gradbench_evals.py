"""GradBench's evals as diffkit programs: every backend against the hand-derived gradients,
and the hand-derived gradients against finite differences and the definitions.

For each eval (``diffkit/gradbench/<eval>.py``) at GradBench's two smallest sizes, with
GradBench's own inputs, the functions run by the forward, reverse and compiled backends
agree with the plain-numpy reference derived by hand to 1e-8 relative (GradBench asks
1e-4); the numeric backend (central differences) at the smallest size, to GradBench's
1e-4. The references themselves are checked against things that are not diffkit:
fourth-order central differences of plain numpy code (conftest's ``central_jvp``),
mpmath, SciPy's densities, the exact solution of the ODE, LU determinants.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import scipy.stats
from conftest import assert_close, central_jvp

import diffkit as dk
from diffkit.gradbench import EVALS, TOLERANCE, det, gmm, kmeans, llsq, lse, lstm, ode

LSTM_STEPS = 32  # lstm: the first characters only (the compiled backend unrolls the loop)


@functools.lru_cache(maxsize=None)
def gradbench_input(name: str, size: str) -> dict:
    """GradBench's input of that size; for lstm (whose inputs are not GradBench's anyway)
    its first LSTM_STEPS characters: 1023 steps take the compiled backend minutes to
    build, the others seconds."""
    input = EVALS[name].input(size)
    return input | {"sequence": input["sequence"][:LSTM_STEPS]} if name == "lstm" else input


def leaves(value) -> list[np.ndarray]:
    """A JSON output's numbers as arrays, in a fixed order (gmm's four fields by name)."""
    if isinstance(value, dict):
        return [np.asarray(value[k], dtype=float) for k in sorted(value)]
    return [np.asarray(value, dtype=float)]


CASES = [(name, size) for name, ev in EVALS.items() for size in ev.sizes[:2]]


@pytest.mark.parametrize("backend", ["forward", "reverse", "compiled"])
@pytest.mark.parametrize("name,size", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_each_backend_matches_the_hand_derived_reference(name, size, backend):
    if name == "lstm" and backend == "compiled":
        # fused kernels for an unrolled recurrence: numba compiles dozens of small kernels
        # (minutes, cold); the same program unfused here, fused in the slow test below
        backend = "compiled[fuse=false]"
    check_backend(name, gradbench_input(name, size), backend)


@pytest.mark.slow
@pytest.mark.parametrize("size", lstm.SIZES[:2])
def test_lstm_by_the_fused_compiled_backend(size):
    input = gradbench_input("lstm", size)
    check_backend("lstm", input | {"sequence": input["sequence"][:3]}, "compiled")


def check_backend(name: str, input: dict, backend: str) -> None:
    ev = EVALS[name]
    static, arrays = ev.prepare(input)
    be = dk.backend(backend)
    for function in ev.functions:
        out = ev.output(function, ev.build(function, be)(static, *arrays))
        expected = ev.reference(function, input)
        assert type(out) is type(expected)
        for got, want in zip(leaves(out), leaves(expected), strict=True):
            assert_close(got, want, rtol=1e-8)
        assert ev.validate(function, input, out) == []


@pytest.mark.parametrize("name", list(EVALS))
def test_the_numeric_backend_is_valid_at_gradbench_tolerance(name):
    ev = EVALS[name]
    size = ev.sizes[0]
    input = gradbench_input(name, size)
    static, arrays = ev.prepare(input)
    for function in ev.functions:
        out = ev.output(function, ev.build(function, dk.backend("numeric"))(static, *arrays))
        assert ev.validate(function, input, out, TOLERANCE) == [], (name, function)


def test_a_compiled_function_is_built_once_per_shape():
    """The tool builds a function once; its compiled programs serve every later call of
    the same shapes (the size, a static value, keys the program: a new n, a new one)."""
    be = dk.backend("compiled")
    run = llsq.build("gradient", be)
    x = np.linspace(0.1, 0.2, 5)
    first = run((16,), x)
    assert_close(run((16,), x), first, rtol=0)
    assert_close(run((17,), x), llsq.gradient_by_hand(x, 17), rtol=1e-10)


# --------------------------------------------------------------------------- GradBench's inputs


def test_the_inputs_are_gradbenchs_draws_in_gradbenchs_order():
    """lse, llsq, kmeans, ode and det seed numpy's global generator once and draw one
    workload after another; gmm seeds a Generator per size. Replayed, the second size's
    numbers follow the first's."""
    rs = np.random.RandomState(31337)
    first, second = rs.rand(2500), rs.rand(5000)
    assert lse.inputs("n=2500")["x"] == first.tolist()
    assert lse.inputs("n=5000")["x"] == second.tolist()
    rs = np.random.RandomState(31337)
    rs.rand(1000, 8)
    points = rs.rand(1000, 16)
    second = kmeans.inputs("k=10,n=1000,d=16")
    assert second["points"] == points.tolist() and second["centroids"] == points[-10:].tolist()
    assert ode.EVAL.sizes[:3] == ("n=1000,s=1", "n=1000,s=10", "n=10000,s=1")
    assert det.inputs("6")["ell"] == 6 and len(det.inputs("6")["A"]) == 36
    g = gmm.inputs("2_10_1000")
    rng = np.random.default_rng(31337)
    x = rng.normal(size=(1000, 2))
    assert np.array_equal(np.array(g["x"]), x) and np.array_equal(g["alpha"], rng.normal(size=10))
    assert (g["d"], g["k"], g["n"], g["m"], g["gamma"]) == (2, 10, 1000, 0, 1.0)
    assert np.array(g["l"]).shape == (10, 1)


def test_sizes_are_named_as_gradbench_describes_them():
    assert EVALS["gmm"].sizes[:4] == ("2_5_1000", "2_10_1000", "2_25_1000", "10_5_1000")
    assert EVALS["llsq"].sizes[0] == "n=16,m=128" and EVALS["lse"].sizes[-1] == "n=1280000"
    assert EVALS["kmeans"].sizes[:4] == ("k=10,n=1000,d=8", "k=10,n=1000,d=16",
                                         "k=10,n=10000,d=8", "k=100,n=1000,d=8")
    assert EVALS["det"].sizes == tuple(str(n) for n in range(5, 12))
    with pytest.raises(dk.DiffkitError, match="unknown size 'n=3' for lse; its sizes are n=2500"):
        EVALS["lse"].input("n=3")


# --------------------------------------------------------------------------- the references


def directions(rng: np.random.Generator, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    return [rng.standard_normal(s) for s in shapes]


def test_lse_reference_against_mpmath_and_differences():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, 7)
    exact = mpmath.log(sum(mpmath.exp(mpmath.mpf(v)) for v in x))
    assert abs(lse.primal_by_hand(x) - float(exact)) <= 1e-15 * abs(float(exact))
    for v in directions(rng, (7,), (7,)):
        assert np.isclose(lse.gradient_by_hand(x) @ v,
                          central_jvp(lse.primal_by_hand, [x], [v]), rtol=1e-9)


def test_llsq_reference_against_the_definition_and_differences():
    rng = np.random.default_rng(2)
    for n, m in ((16, 5), (7, 3)):  # odd n: t = 0 in the middle, s = 0 there
        x = rng.uniform(size=m)
        total = 0.0
        for i in range(n):
            t = -1 + i * 2 / (n - 1)
            inner = (t > 0) - (t < 0) - sum(x[j] * t ** j for j in range(m))
            total += inner * inner
        assert np.isclose(llsq.primal_by_hand(x, n), total / 2, rtol=1e-13)
        for v in directions(rng, (m,), (m,)):
            assert np.isclose(llsq.gradient_by_hand(x, n) @ v,
                              central_jvp(lambda z: llsq.primal_by_hand(z, n), [x], [v]),
                              rtol=1e-8)


def small_gmm(rng: np.random.Generator, d: int, k: int, n: int) -> tuple:
    params = (rng.normal(size=k), rng.uniform(size=(k, d)), 0.3 * rng.normal(size=(k, d)),
              0.5 * rng.normal(size=(k, d * (d - 1) // 2)))
    return params, rng.normal(size=(n, d))


@pytest.mark.parametrize("m,gamma", [(0, 1.0), (2, 0.7)])
def test_gmm_reference_against_scipy_densities(m, gamma):
    """F = log Π_i Σ_k φ_k N(x_i; μ_k, (Q_kᵀQ_k)⁻¹) + Σ_k log Wishart(Q_kᵀQ_k; ν, I/γ²),
    the definition, with SciPy's densities (GradBench's --validate-naive, in logs)."""
    rng = np.random.default_rng(3)
    d, k, n = 3, 4, 6
    params, x = small_gmm(rng, d, k, n)
    alpha, mu, q, l = params
    precision = [Qk.T @ Qk for Qk in gmm._q_numpy(q, l)]
    phi = np.exp(alpha) / np.exp(alpha).sum()
    log_like = sum(np.log(sum(phi[j] * scipy.stats.multivariate_normal.pdf(
        x[i], mean=mu[j], cov=np.linalg.inv(precision[j])) for j in range(k)))
        for i in range(n))
    log_prior = sum(scipy.stats.wishart.logpdf(P, df=d + m + 1, scale=np.eye(d) / gamma ** 2)
                    for P in precision)
    assert np.isclose(gmm.objective_by_hand(params, x, m, gamma), log_like + log_prior,
                      rtol=1e-11)


@pytest.mark.parametrize("m,gamma", [(0, 1.0), (2, 0.7)])
def test_gmm_reference_gradient_against_differences(m, gamma):
    rng = np.random.default_rng(4)
    params, x = small_gmm(rng, 3, 4, 6)
    grads = gmm.jacobian_by_hand(params, x, m, gamma)
    for i, v in itertools.product(range(4), range(2)):
        t = [np.zeros_like(p) for p in params]
        t[i] = rng.standard_normal(params[i].shape)
        fd = central_jvp(lambda *ps: gmm.objective_by_hand(ps, x, m, gamma), params, t)
        assert np.isclose(np.sum(grads[i] * t[i]), fd, rtol=1e-8, atol=1e-9), (i, v)


def test_kmeans_reference_against_differences():
    """dir = J / H with J and the Hessian's diagonal H by central differences of the cost
    (a quadratic near the point: second differences are exact up to rounding)."""
    rng = np.random.default_rng(5)
    P = rng.uniform(size=(30, 2))
    C = P[-4:].copy()
    h, J, H = 1e-4, np.zeros_like(C), np.zeros_like(C)
    for idx in np.ndindex(*C.shape):
        e = np.zeros_like(C)
        e[idx] = h
        up, mid, down = (kmeans.cost_by_hand(C + s * e, P) for s in (1, 0, -1))
        J[idx], H[idx] = (up - down) / (2 * h), (up - 2 * mid + down) / h ** 2
    assert_close(kmeans.dir_by_hand(C, P), J / H, rtol=1e-6)
    direct = sum(min(np.sum((p - c) ** 2) for c in C) for p in P)
    assert np.isclose(kmeans.cost_by_hand(C, P), direct, rtol=1e-14)


def test_ode_reference_against_the_exact_solution_and_differences():
    """y_i(2) = (Π_{j≤i} x_j) 2^{i+1}/(i+1)!; RK4's error is O(h⁴)."""
    from math import factorial

    rng = np.random.default_rng(6)
    x = rng.uniform(size=6)
    exact = np.cumprod(x) * np.array([2.0 ** (i + 1) / factorial(i + 1) for i in range(6)])
    assert_close(ode.primal_by_hand(x, 200), exact, rtol=1e-9)
    for s in (1, 3):
        for v in directions(rng, (6,), (6,)):
            assert np.isclose(ode.gradient_by_hand(x, s) @ v,
                              central_jvp(lambda z: ode.primal_by_hand(z, s)[-1], [x], [v]),
                              rtol=1e-9)


def test_det_reference_and_the_expansion_tree():
    rng = np.random.default_rng(7)
    A = rng.uniform(size=(5, 5))
    for v in directions(rng, (5, 5), (5, 5)):
        assert np.isclose(np.sum(det.gradient_by_hand(A) * v),
                          central_jvp(det.primal_by_hand, [A], [v]), rtol=1e-9)
    # the tree: ℓ!/(ℓ-k-1)! nodes at depth k+1, each a distinct ordered choice of columns
    for ell in (1, 2, 4, 6):
        levels = det.tree(ell)
        assert [cols.size for cols, _ in levels] == [
            factorial_ratio(ell, ell - k - 1) for k in range(ell)]
        assert levels[-1][1].tolist() == [1.0]
    assert det.det(np.eye(1) * 3.0) == 3.0


def factorial_ratio(a: int, b: int) -> int:
    from math import factorial

    return factorial(a) // factorial(b)


def test_lstm_reference_against_the_definition_and_differences():
    """The loss by a literal transcription (cell by cell, ADBench's loops) and the
    hand-derived gradient by central differences."""
    rng = np.random.default_rng(8)
    layers, b, c = 2, 3, 5
    main, extra = rng.uniform(size=(2 * layers, 4 * b)), rng.uniform(size=(3, b))
    state, sequence = rng.uniform(size=(2 * layers, b)), rng.integers(0, 2, (c, b)) * 1.0

    def literal(main, extra):
        sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
        h = [list(state[2 * i]) for i in range(layers)]
        cell = [list(state[2 * i + 1]) for i in range(layers)]
        total = 0.0
        for t in range(c - 1):
            x = [sequence[t][j] * extra[0][j] for j in range(b)]
            for i in range(layers):
                w, bias = main[2 * i], main[2 * i + 1]
                for j in range(b):
                    f = sig(x[j] * w[j] + bias[j])
                    ig = sig(h[i][j] * w[b + j] + bias[b + j])
                    o = sig(x[j] * w[2 * b + j] + bias[2 * b + j])
                    g = np.tanh(h[i][j] * w[3 * b + j] + bias[3 * b + j])
                    cell[i][j] = cell[i][j] * f + ig * g
                    h[i][j] = o * np.tanh(cell[i][j])
                x = h[i]
            y = [x[j] * extra[1][j] + extra[2][j] for j in range(b)]
            lse_ = np.log(sum(np.exp(v) for v in y) + 2)
            total += sum(sequence[t + 1][j] * (y[j] - lse_) for j in range(b))
        return -total / ((c - 1) * b)

    assert np.isclose(lstm.objective_by_hand(main, extra, state, sequence),
                      literal(main, extra), rtol=1e-13)
    d_main, d_extra = lstm.jacobian_by_hand(main, extra, state, sequence)
    for _ in range(3):
        v, u = rng.standard_normal(main.shape), rng.standard_normal(extra.shape)
        fd = central_jvp(lambda m, e: lstm.objective_by_hand(m, e, state, sequence),
                         [main, extra], [v, u])
        assert np.isclose(np.sum(d_main * v) + np.sum(d_extra * u), fd, rtol=1e-9)
