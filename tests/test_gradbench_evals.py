"""GradBench's evals as diffkit programs: every backend against the hand-derived gradients,
and the hand-derived gradients against finite differences and the definitions.

For each eval (``diffkit/gradbench/<eval>.py``) at GradBench's two smallest sizes, with
GradBench's own inputs (ba's and ht's: generated problems of their shapes), the functions
run by the forward, reverse and compiled backends agree with the plain-numpy reference
derived by hand to 1e-8 relative (GradBench asks 1e-4); the numeric backend (central
differences) at the smallest size, to GradBench's 1e-4. particle and saddle, whose one
input takes a descent of ~80 (~155) evaluations of a nested derivative, are checked at
that derivative, mode by mode, and in full on one backend (every backend: ``slow``). The
references themselves are checked against things that are not diffkit: fourth-order
central differences of plain numpy code (conftest's ``central_jvp``), mpmath, SciPy's
densities and rotations, the exact solution of the ODE, LU determinants, GradBench's
expected outputs.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import scipy.stats
from conftest import assert_close, central_jvp

import diffkit as dk
from diffkit.gradbench import EVALS, TOLERANCE, ba, det, gmm, ht, kmeans, llsq, lse, lstm, \
    ode, particle, saddle
from diffkit.gradbench.common import argmin, argmin_by_hand, bounded_runner, mismatches, \
    value_and_gradient

LSTM_STEPS = 32  # lstm: the first characters only (the compiled backend unrolls the loop)
NESTED = ("particle", "saddle")  # one input each, a descent of nested derivatives
# their loops unrolled (hundreds of steps with inner derivatives): fused, numba compiles
# kernels for minutes; the same programs unfused here
NESTED_BACKENDS = ["forward", "reverse", "compiled", "compiled[fuse=false]"]
# JAX runs the same program on its arrays: dk.fori_loop is lax.fori_loop there, the inner
# derivative nests inside the outer one as JAX's transforms do, jax.jit compiles it whole
JAX_JIT = pytest.param("jax[jit=true]", marks=pytest.mark.jax)


@functools.lru_cache(maxsize=None)
def gradbench_input(name: str, size: str) -> dict:
    """GradBench's input of that size; for lstm (whose inputs are not GradBench's anyway)
    its first LSTM_STEPS characters: 1023 steps take the compiled backend minutes to
    build, the others seconds."""
    input = EVALS[name].input(size)
    return input | {"sequence": input["sequence"][:LSTM_STEPS]} if name == "lstm" else input


@functools.lru_cache(maxsize=None)
def expected(name: str, size: str, function: str):
    return EVALS[name].reference(function, gradbench_input(name, size))


def leaves(value) -> list[np.ndarray]:
    """A JSON output's numbers as arrays, in a fixed order (objects' fields by name)."""
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in leaves(value[k])]
    return [np.asarray(value, dtype=float)]


SIMPLE = ht.SIZES[len(ht.C):len(ht.C) + 1]  # ht's --variant simple, at its smallest
CASES = [(name, size) for name, ev in EVALS.items() if name not in NESTED
         for size in ev.sizes[:2]] + [("ht", size) for size in SIMPLE]


@pytest.mark.parametrize("backend", ["forward", "reverse", "compiled"])
@pytest.mark.parametrize("name,size", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_each_backend_matches_the_hand_derived_reference(name, size, backend):
    if name == "lstm" and backend == "compiled":
        # fused kernels for an unrolled recurrence: numba compiles dozens of small kernels
        # (minutes, cold); the same program unfused here, fused in the slow test below
        backend = "compiled[fuse=false]"
    check_backend(name, size, backend)


@pytest.mark.slow
@pytest.mark.parametrize("size", lstm.SIZES[:2])
def test_lstm_by_the_fused_compiled_backend(size):
    input = gradbench_input("lstm", size)
    short = input | {"sequence": input["sequence"][:3]}
    ev = EVALS["lstm"]
    static, arrays = ev.prepare(short)
    for function in ev.functions:
        out = ev.output(function, ev.build(function, dk.backend("compiled"))(static, *arrays))
        for got, want in zip(leaves(out), leaves(ev.reference(function, short)), strict=True):
            assert_close(got, want, rtol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("name,size", [("det", "7"), ("ode", "n=1000,s=100")])
def test_larger_programs_by_the_fused_compiled_backend(name, size):
    """det at ℓ = 7 (5,040 products) and RK4 over 100 steps (its state written once per
    step: 69 s to build when each step's kernels recomputed every step before it, 4 s
    now): the hand-derived gradient to 1e-10."""
    ev = EVALS[name]
    static, arrays = ev.prepare(gradbench_input(name, size))
    got = ev.output("gradient", ev.build("gradient", dk.backend("compiled"))(static, *arrays))
    assert_close(np.asarray(got), np.asarray(expected(name, size, "gradient")), rtol=1e-10)


def check_backend(name: str, size: str, backend: str) -> None:
    ev = EVALS[name]
    input = gradbench_input(name, size)
    static, arrays = ev.prepare(input)
    be = dk.backend(backend)
    for function in ev.functions:
        result = ev.build(function, be)(static, *arrays)
        out, want = ev.output(function, result), expected(name, size, function)
        assert type(out) is type(want)
        for got, ref in zip(leaves(out), leaves(want), strict=True):
            assert_close(got, ref, rtol=1e-8)
        assert mismatches(want, out) == []
        if name == "ba":  # its output is a summary: every block and weight, too
            check_ba_in_full(input, function, result)


def check_ba_in_full(input: dict, function: str, result) -> None:
    (obs,), (cams, X, w, feats) = ba.prepare(input)
    params = np.concatenate([cams[obs.array[:, 0]], X[obs.array[:, 1]], w[:, None]], axis=1)
    e, blocks = ba.blocks_by_hand(params, feats)
    want = (e, 1.0 - w * w) if function == "objective" else (blocks, -2.0 * w)
    for got, ref in zip(result[0], want, strict=True):
        assert_close(got, ref, rtol=1e-8)


NUMERIC = [(name, function) for name, ev in EVALS.items() if name not in NESTED
           for function in ev.functions]


@pytest.mark.parametrize("name,function", [
    pytest.param(n, f, marks=pytest.mark.xfail(strict=True, reason=(
        "diffkit: the numeric backend's jacobian under vmap fails (iscomplexobj of a value "
        "under vmap)"))) if (n, f) == ("ba", "jacobian") else (n, f) for n, f in NUMERIC],
    ids=[f"{n}-{f}" for n, f in NUMERIC])
def test_the_numeric_backend_is_valid_at_gradbench_tolerance(name, function):
    ev = EVALS[name]
    input = gradbench_input(name, ev.sizes[0])
    static, arrays = ev.prepare(input)
    out = ev.output(function, ev.build(function, dk.backend("numeric"))(static, *arrays))
    assert mismatches(expected(name, ev.sizes[0], function), out, TOLERANCE) == []


# ------------------------------------------------------------------ nested: particle, saddle


# flights of 64 steps (in the air) and of 512 (a landing), every function on every backend
# (compiled: one loop in the graph)
FLIGHTS = [(f, b, steps) for f in particle.FUNCTIONS for b in [*NESTED_BACKENDS, "jax[jit=true]"]
           for steps in (64, particle.STEPS)]


@pytest.mark.parametrize("function,backend,steps", [
    pytest.param(*case, marks=pytest.mark.jax) if case[1].startswith("jax") else case
    for case in FLIGHTS], ids=[f"{f}-{b}-{s}" for f, b, s in FLIGHTS])
def test_particle_nested_derivative_mode_by_mode(function, backend, steps):
    """dE/dw through the Euler loop (each step's ∇ₓp by the inner mode) by the outer mode,
    at GradBench's w = 0: against the tangent carried by hand."""
    be = dk.backend(backend)
    inner = value_and_gradient(particle.potential, function[1], be)
    outer = value_and_gradient(lambda w: particle.miss(w, inner, steps), function[0], be,
                               has_aux=True)
    value, gradient, landed = outer(np.array([0.0]))
    want = particle.trajectory_by_hand(0.0, steps)
    assert bool(landed) is want[2] is (steps == particle.STEPS)
    assert_close(value, want[0], rtol=1e-8)
    assert_close(gradient, np.array([want[1]]), rtol=1e-8)


@pytest.mark.parametrize("backend", [*NESTED_BACKENDS, JAX_JIT])
@pytest.mark.parametrize("function", saddle.FUNCTIONS)
def test_saddle_nested_derivative_mode_by_mode(function, backend):
    """∇m(p) through the inner descent (170 iterations from (1, 1), ∇_q by the inner
    mode) by the outer mode: m by the descent by hand, ∇m = 2p."""
    be, p, start = dk.backend(backend), np.array([0.7, -0.2]), np.array([1.0, 1.0])
    inner = value_and_gradient(saddle.against, function[1], be)
    outer = value_and_gradient(lambda p, s: saddle.best(p, s, inner, 256), function[0], be,
                               has_aux=True)
    value, gradient, done = outer(p, start)
    q = argmin_by_hand(lambda q: np.sum(q * q) - np.sum(p * p), lambda q: 2.0 * q, start)
    assert bool(done)
    assert_close(value, np.sum(p * p) - np.sum(q * q), rtol=1e-8)
    assert_close(gradient, 2.0 * p, rtol=1e-8)


def test_saddle_in_full_on_one_backend():
    """GradBench's input, its descents to the end: rr by the unfused compiled backend
    (particle's ~80 flights: in the slow test_a_nested_eval_in_full)."""
    check_nested("saddle", "rr", "compiled[fuse=false]")


# GradBench's whole descents: every mode by the unfused compiled backend, rr by the eager
# ones (the mode-by-mode tests above check each backend against closed forms; the eager
# backends' ff and rf take a minute and more per eval, --soak runs them: see below)
IN_FULL = [(n, f, "compiled[fuse=false]") for n in NESTED for f in particle.FUNCTIONS] + \
    [(n, "rr", b) for n in NESTED for b in ("forward", "reverse")]
EVERY_BACKEND = [(n, f, b) for n in NESTED for f in particle.FUNCTIONS for b in NESTED_BACKENDS
                 if (n, f, b) not in IN_FULL]


@pytest.mark.slow
@pytest.mark.parametrize("name,function,backend", IN_FULL)
def test_a_nested_eval_in_full(name, function, backend):
    check_nested(name, function, backend)


@pytest.mark.jax
@pytest.mark.parametrize("name,function", [(n, f) for n in NESTED for f in particle.FUNCTIONS])
def test_a_nested_eval_in_full_by_jax_jit(name, function):
    """The same program in JAX (its loops lax's, compiled whole): the race's other side
    (benchmarks/nested_race.py) computes what GradBench expects."""
    check_nested(name, function, "jax[jit=true]")


@pytest.mark.soak
@pytest.mark.parametrize("name,function,backend", EVERY_BACKEND)
def test_a_nested_eval_in_full_on_the_eager_backends(name, function, backend):
    """The rest of every function by every backend (the reverse backend's ff: minutes)."""
    check_nested(name, function, backend)


def check_nested(name: str, function: str, backend: str) -> None:
    ev = EVALS[name]
    input = ev.input(ev.sizes[0])
    static, arrays = ev.prepare(input)
    out = ev.output(function, ev.build(function, dk.backend(backend))(static, *arrays))
    assert_close(np.asarray(out), np.asarray(expected(name, ev.sizes[0], function)), rtol=1e-8)
    assert mismatches(GRADBENCH_EXPECTS[name], out) == []


# what GradBench's evals expect (evals/particle/run.py, evals/saddle/run.py)
GRADBENCH_EXPECTS = {"particle": 0.2071918746486116, "saddle": [8.246324826140356e-06] * 4}


def test_the_descent_without_branches_takes_gd_hpps_steps():
    """argmin's where-written iterations against gd.hpp's loop (in plain numpy), on a
    Rosenbrock valley where the descent doubles its step and overshoots: on values, and
    traced by the compiled backend (all its iterations unrolled)."""
    start, calls = np.array([1.5, 1.0]), {"f": 0, "g": 0}

    def f(x):
        calls["f"] += 1
        return (1.0 - x[0]) ** 2 + 10.0 * (x[1] - x[0] ** 2) ** 2

    def g(x):
        calls["g"] += 1
        return np.array([-2.0 * (1.0 - x[0]) - 40.0 * x[0] * (x[1] - x[0] ** 2),
                         20.0 * (x[1] - x[0] ** 2)])

    want = argmin_by_hand(f, g, start)
    accepted, tried = calls["g"] - 1, calls["f"] - 1
    assert accepted > 10 and tried > accepted  # η doubled, and candidates were refused
    x, done = argmin(lambda x: (f(x), g(x)), start, (), 10_000)
    assert bool(done) and np.array_equal(x, want)
    be = dk.backend("compiled[fuse=false]")
    vg = value_and_gradient(lambda x: (1.0 - x[0]) ** 2 + 10.0 * (x[1] - x[0] ** 2) ** 2, "r", be)
    x, done = be.stage(lambda limit, x: argmin(vg, x, (), limit))(tried + 5, start)
    assert bool(done)
    assert_close(x, want, rtol=1e-12)


def test_a_loop_that_runs_out_is_run_again_with_twice_the_limit():
    be, built = dk.backend("reverse"), []

    def solve(limit):
        built.append(limit)
        return particle.solver("rr", be, limit)

    # from w = 0.205 |dE/dw| < 1: the descent stops at once, after one flight of 352 steps
    run = bounded_runner(solve, 128, 1 << 16, "the flight")
    assert run((), np.array([0.205])).tolist() == [0.205] and built == [128, 256, 512]
    run((), np.array([0.205]))
    assert built == [128, 256, 512]  # the bound reached is kept
    capped = bounded_runner(lambda limit: particle.solver("rr", be, limit), 64, 128, "the flight")
    with pytest.raises(dk.DiffkitError, match="^the flight did not finish within 128 iterations$"):
        capped((), np.array([0.205]))


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
    assert EVALS["ba"].sizes[:2] == ("ba1_n49_m7776_p31843", "ba2_n21_m11315_p36455")
    assert EVALS["ba"].sizes[-1] == "ba14_n356_m226730_p1255268"  # GradBench's default --max
    assert EVALS["ht"].sizes[:2] == ("hand1_t26_c100", "hand2_t26_c192")
    assert EVALS["ht"].sizes[-1] == "simple_big/hand12_t26_c100000"
    assert EVALS["particle"].sizes == EVALS["saddle"].sizes == ("w=0",)  # (saddle's, sic)
    assert EVALS["particle"].functions == EVALS["saddle"].functions == ("rr", "ff", "fr", "rf")
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


def test_ba_reference_against_scipy_rotations_and_differences():
    """e by the definition with SciPy's rotations; each 2 × 15 block by central
    differences (one observation with r = 0, Rodrigues' other branch)."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(9)
    k = 5
    params = np.concatenate([rng.normal(0, 0.5, (k, 3)), rng.uniform(0, 1, (k, 3)),
                             rng.uniform(300, 500, (k, 1)), rng.normal(size=(k, 2)),
                             rng.uniform(0, 0.1, (k, 2)), rng.uniform(4, 6, (k, 3)),
                             rng.uniform(size=(k, 1))], axis=1)  # points well in front
    params[0, 0:3] = 0.0
    feats = rng.uniform(0, 100, (k, 2))
    e, J = ba.blocks_by_hand(params, feats)
    Y = np.einsum("kij,kj->ki", Rotation.from_rotvec(params[:, 0:3]).as_matrix(),
                  params[:, 11:14] - params[:, 3:6])
    y = Y[:, :2] / Y[:, 2:]
    s = np.sum(y * y, axis=1, keepdims=True)
    d = y * (1 + params[:, 9:10] * s + params[:, 10:11] * s * s)
    assert_close(e, params[:, 14:] * (d * params[:, 6:7] + params[:, 7:9] - feats), rtol=1e-12)
    for i in range(k):
        for v in directions(rng, (15,), (15,)):
            fd = central_jvp(lambda z: ba.blocks_by_hand(z[None], feats[i:i + 1])[0][0],
                             [params[i]], [v], h=1e-4)
            assert_close(J[i] @ v, fd, rtol=1e-8)


def test_ba_reads_adbench_files(tmp_path):
    cam = [0.1, -0.2, 0.3, 1.0, 2.0, 3.0, 400.0, 1.5, -2.5, 0.01, 0.001]
    good = tmp_path / "ba0_n2_m3_p5.txt"
    good.write_text(f"2 3 5\n{' '.join(map(str, cam))} \n7.5 0.25 3.0\n0.5\n270.0 830.5\n")
    assert ba.read(good) == {"n": 2, "m": 3, "p": 5, "cam": cam, "x": [7.5, 0.25, 3.0],
                             "w": 0.5, "feat": [270.0, 830.5]}
    bad = tmp_path / "bad.txt"
    bad.write_text(f"2 3 5\n{' '.join(map(str, cam[:10]))}\n7.5 0.25 3.0\n0.5\n270 830\n")
    with pytest.raises(ba.InputError, match=f"^{bad}: line 2 must be the camera .11 numbers.,"):
        ba.read(bad)
    with pytest.raises(ba.InputError, match="cannot read it"):
        ba.read(tmp_path / "missing.txt")


def small_hand(rng: np.random.Generator, c: int, complicated: bool, mirrored: bool = False,
               still: bool = False) -> dict:
    """ht's generated model cut to its first 600 vertices (its triangles' are the first
    544), c points; ``still``: a global rotation under ADBench's 10⁻⁴ cut."""
    hand = ht.model() | {"is_mirrored": mirrored}
    hand = hand | {k: hand[k][:600] for k in ("base_positions", "weights")}
    theta = rng.normal(size=26)
    if still:
        theta[0:3] = [3e-5, -2e-5, 1e-5]
    us = rng.uniform(0, 0.5, (c, 2)).tolist() if complicated else []
    corr = rng.integers(0, ht.TRIANGLES if complicated else 600, c).tolist()
    return {"theta": theta.tolist(), "us": us,
            "data": {"model": hand, "correspondences": corr,
                     "points": rng.normal(0, 0.05, (c, 3)).tolist()}}


def literal_hand(input: dict) -> np.ndarray:
    """The residuals vertex by vertex, with SciPy's rotations: R_z R_y R_x is the
    intrinsic ZYX Euler rotation, the global one a rotation vector."""
    from scipy.spatial.transform import Rotation

    hand, theta = input["data"]["model"], np.array(input["theta"])
    angles = np.append(theta, 0.0)[ht.pose_indices()].reshape(-1, 3)  # (x, z, y)
    world = []
    for b, parent in enumerate(hand["parents"]):
        turn = np.eye(4)
        turn[:3, :3] = Rotation.from_euler("ZYX", angles[b, [1, 2, 0]]).as_matrix()
        posed = np.array(hand["base_relatives"][b]) @ turn
        world.append(posed if parent < 0 else world[parent] @ posed)
    moves = [w @ np.array(i) for w, i in zip(world, hand["inverse_base_absolutes"])]
    V = np.array([sum(wt * (moves[b] @ np.array(P))[:3] for b, wt in enumerate(weights))
                  for P, weights in zip(hand["base_positions"], hand["weights"])])
    if hand["is_mirrored"]:
        V[:, 0] *= -1
    R = np.eye(3) if np.linalg.norm(theta[:3]) < 1e-4 else \
        Rotation.from_rotvec(theta[:3]).as_matrix()
    V = V @ R.T + theta[3:6]
    points, corr = np.array(input["data"]["points"]), input["data"]["correspondences"]
    if not input["us"]:
        return (points - V[corr]).reshape(-1)
    us, tri = np.array(input["us"]), np.array(hand["triangles"])[corr]
    return (points - us[:, :1] * V[tri[:, 0]] - us[:, 1:] * V[tri[:, 1]]
            - (1 - us[:, :1] - us[:, 1:]) * V[tri[:, 2]]).reshape(-1)


@pytest.mark.parametrize("complicated,mirrored,still", [(True, False, False),
                                                        (False, True, False),
                                                        (True, False, True)])
def test_ht_reference_against_scipy_rotations_and_differences(complicated, mirrored, still):
    """The residuals by a literal transcription with SciPy's rotations; the Jacobian by
    central differences along θ and a shift of every u (at the 10⁻⁴ cut, where ADBench's
    rotation is the identity, the global rotation's columns are 0 by convention)."""
    rng = np.random.default_rng(10)
    input = small_hand(rng, 7, complicated, mirrored, still)
    assert_close(ht.by_hand("objective", input), literal_hand(input), rtol=1e-12)
    J = ht.by_hand("jacobian", input)
    assert J.shape == (21, 28 if complicated else 26)
    theta, us = np.array(input["theta"]), np.array(input["us"]).reshape(-1, 2)
    moved = slice(3, None) if still else slice(None)

    def residuals(t, shift):
        return ht.by_hand("objective", input | {"theta": t.tolist(),
                                                "us": (us + shift).tolist()})

    for _ in range(2):
        v = np.zeros(26)
        v[moved] = rng.standard_normal(26)[moved]
        u = rng.standard_normal(2) if complicated else np.zeros(2)
        fd = central_jvp(residuals, [theta, np.zeros(2)], [v, u])
        assert_close(J @ (np.concatenate([u, v]) if complicated else v), fd, rtol=1e-8)
    if still:
        assert np.all(J[:, -26:-23] == 0.0)


def numbers(values) -> list[str]:
    return [repr(float(v)) for v in np.ravel(values)]


def write_hand(folder, input: dict) -> None:
    """``input`` as ADBench's files: model/{bones,vertices,triangles}.txt and the data."""
    hand = input["data"]["model"]
    (folder / "model").mkdir()
    (folder / "model" / "bones.txt").write_text("".join(
        ":".join([name, str(parent), *numbers(rel), *numbers(inv)]) + "\n"
        for name, parent, rel, inv in zip(hand["bone_names"], hand["parents"],
                                          hand["base_relatives"], hand["inverse_base_absolutes"])))
    (folder / "model" / "vertices.txt").write_text("".join(
        ":".join([*numbers(p[:3]), "0", "0", "1", "0", "0", str(np.count_nonzero(w)),
                  *(f"{b}:{w[b]!r}" for b in np.flatnonzero(w))]) + "\n"
        for p, w in zip(hand["base_positions"], hand["weights"])))
    (folder / "model" / "triangles.txt").write_text(
        "".join(":".join(map(str, t)) + "\n" for t in hand["triangles"]))
    data = input["data"]
    (folder / "hand1_t26_c7.txt").write_text(
        f"{len(data['points'])} 26\n"
        + "".join(f"{c} {' '.join(map(repr, p))}\n" for c, p in zip(data["correspondences"],
                                                                     data["points"]))
        + "".join(f"{u[0]!r} {u[1]!r}\n" for u in input["us"])
        + "".join(f"{t!r}\n" for t in input["theta"]))


@pytest.mark.parametrize("complicated", [True, False])
def test_ht_reads_adbench_files(tmp_path, complicated):
    input = small_hand(np.random.default_rng(11), 7, complicated)
    write_hand(tmp_path, input)
    read = ht.read(tmp_path / "hand1_t26_c7.txt")
    assert np.array_equal(ht.by_hand("jacobian", read), ht.by_hand("jacobian", input))
    assert read["us"] == input["us"] and read["data"]["points"] == input["data"]["points"]
    (tmp_path / "hand1_t26_c7.txt").write_text("7 26\n1 0.5 0.5\n")
    with pytest.raises(ht.InputError, match="hand1_t26_c7.txt: 2 lines, but c = 7 and 26 angles"):
        ht.read(tmp_path / "hand1_t26_c7.txt")


def test_particle_reference_against_a_literal_flight_gradbench_and_differences():
    """E(w) by a scalar transcription of the flight; dE/dw by central differences (the
    number of steps is the same within ±2h); the descent's end is GradBench's."""
    import math

    def flight(w):
        x, y, vx, vy = 0.0, 8.0, 0.75, 0.0
        while y + 0.1 * vy > 0:
            ax = ay = 0.0
            for cx, cy in ((10.0, 10.0 - w), (10.0, 0.0)):
                r = math.hypot(x - cx, y - cy)
                ax, ay = ax + (x - cx) / r ** 3, ay + (y - cy) / r ** 3
            x, y, vx, vy = x + 0.1 * vx, y + 0.1 * vy, vx + 0.1 * ax, vy + 0.1 * ay
        return (x - y / vy * vx) ** 2

    for w in (0.0, 0.3, -2.0):  # 352, 360 and 475 steps
        value, slope, _ = particle.trajectory_by_hand(w)
        assert np.isclose(value, flight(w), rtol=1e-10)
        fd = central_jvp(lambda v: particle.trajectory_by_hand(float(v))[0], [np.array(w)],
                         [np.array(1.0)], h=1e-4)
        assert np.isclose(slope, fd, rtol=1e-7)
    assert np.isclose(particle.particle_by_hand(0.0), GRADBENCH_EXPECTS["particle"], rtol=1e-12,
                      atol=0)


def test_saddle_reference_against_gradbench_and_differences():
    """∇m = 2p by central differences of m, the inner descent in plain numpy."""
    assert saddle.saddle_by_hand(np.array([1.0, 1.0])) == GRADBENCH_EXPECTS["saddle"]
    start, rng = np.array([1.0, 1.0]), np.random.default_rng(12)

    def m(p):
        q = argmin_by_hand(lambda q: np.sum(q * q) - np.sum(p * p), lambda q: 2.0 * q, start)
        return np.sum(p * p) - np.sum(q * q)

    p = np.array([0.7, -0.2])
    for v in directions(rng, (2,), (2,)):
        assert np.isclose(central_jvp(m, [p], [v]), 2.0 * p @ v, rtol=1e-8)
