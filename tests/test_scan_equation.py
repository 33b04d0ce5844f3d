"""A loop kept a loop: ``dk.scan`` and ``dk.fori_loop`` as one ``scan`` equation in a traced
graph (``backend="compiled"``, ``dk.jit``), and its rules.

Values and derivatives against closed forms (the linear recurrence x_{t+1} = a x_t + b_t,
whose state is a^T x_0 + Σ a^(T-1-t) b_t), against central differences of the plain numpy
loop, and against JAX's ``lax.scan`` where installed; the graph's size not growing with the
number of steps; the loop and its saving twin computed once; every fallback to unrolling
still right.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, central_diff

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.compiler.program import build

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

COMPILED = ["compiled", "compiled[fuse=false]"]


def prims(fun, *args) -> list[str]:
    """The primitives of ``fun``'s optimized program, in order."""
    return [e.prim.name for e in build(fun, args).graph.eqns]


def last_state(a, x0, b):
    return dk.scan(lambda x, b_t: (a * x + b_t, None), x0, b)[0]


def closed_form(a, x0, b):
    """(x_T, ∂/∂a, ∂/∂x0, ∂/∂b) of the linear recurrence."""
    T = len(b)
    powers = a ** np.arange(T - 1, -1, -1)          # a^(T-1-t)
    x_T = a ** T * x0 + powers @ b
    d_a = T * a ** (T - 1) * x0 + (np.arange(T - 1, -1, -1) * a ** np.maximum(
        np.arange(T - 2, -2, -1), 0)) @ b
    return x_T, d_a, a ** T, powers


B = np.random.default_rng(5).normal(size=40)


@pytest.mark.parametrize("backend", COMPILED)
def test_the_recurrence_and_its_gradient_against_the_closed_form(backend):
    a, x0 = 0.93, 0.4
    x_T, d_a, d_x0, d_b = closed_form(a, x0, B)
    g = dk.grad(last_state, argnums=(0, 1, 2), backend=backend)(a, x0, B)
    assert_close(dk.jit(last_state)(a, x0, B), x_T, rtol=1e-13)
    assert_close(g[0], d_a, rtol=1e-12)
    assert_close(g[1], d_x0, rtol=1e-12)
    assert_close(g[2], d_b, rtol=1e-12)


def test_the_graph_does_not_grow_with_the_steps():
    """One scan equation whatever the length: build time independent of T."""
    grad = dk.grad(last_state, argnums=(0, 2))
    small = prims(grad, 0.9, 0.4, np.ones(10))
    large = prims(grad, 0.9, 0.4, np.ones(10_000))
    assert small == large and small.count("scan") == 2  # forward saving, reverse sweep
    assert len(small) < 30


def test_value_and_grad_runs_the_forward_loop_once():
    """The primal loop is a prefix of the loop that saves its carries for the reverse
    sweep: the passes keep one."""
    names = prims(dk.value_and_grad(lambda a: last_state(a, 0.4, B)), 0.9)
    assert names.count("scan") == 2


def test_forward_mode_runs_the_loop_once():
    """A jvp through a loop (a scan with ys, a while loop) is one loop, its JVP: the
    loop's own carries and ys are read out of it, not computed by a second loop."""
    def running(a):  # the final state and every state, as a scan's carry and ys
        return dk.scan(lambda x, b_t: (a * x + b_t, a * x), 0.4, B)

    push = lambda f: lambda a: dk.jvp(f, (a,), (1.0,), backend="compiled")  # noqa: E731
    assert prims(push(running), 0.9).count("scan") == 1
    assert prims(push(newton), 2.0).count("while_loop") == 1
    (last, states), (d_last, d_states) = push(running)(0.9)
    x_T, d_a, _, _ = closed_form(0.9, 0.4, B)
    assert_close(last, x_T, rtol=1e-13)
    assert_close(d_last, d_a, rtol=1e-12)
    assert_close(states[-1] + B[-1], x_T, rtol=1e-13)  # y_t = a x_t, x_(t+1) = y_t + b_t
    assert_close(d_states, central_diff(lambda a: running(a)[1], 0.9), rtol=1e-6)


def test_second_derivative_is_a_loop_too():
    """x_T = a^T for x0 = 1, b = 0: the Hessian, forward over the reverse sweep."""
    f = lambda a: last_state(a, 1.0, np.zeros(12))
    assert_close(dk.hessian(f, backend="compiled")(0.8), 12 * 11 * 0.8 ** 10, rtol=1e-12)
    assert_close(dk.jvp(f, (0.8,), (2.0,), backend="compiled")[1], 2 * 12 * 0.8 ** 11,
                 rtol=1e-13)


def lstm_like(w, xs):
    """Trees in the carry, two ys, the steps run from the last to the first."""
    def step(c, x):
        h = dnp.tanh(c["h"] * w[0] + x * w[1])
        return {"h": h, "s": c["s"] + h * h}, (dnp.sin(h), dnp.sum(h))
    c, (ys, sums) = dk.scan(step, {"h": np.array([0.5, -0.1]), "s": np.zeros(2)}, xs,
                            reverse=True)
    return dnp.sum(c["h"]) + dnp.sum(c["s"] ** 2) + dnp.sum(ys * ys) + dnp.sum(sums)


def lstm_like_numpy(w, xs):
    h, s, total = np.array([0.5, -0.1]), np.zeros(2), 0.0
    for x in xs[::-1]:
        h = np.tanh(h * w[0] + x * w[1])
        s = s + h * h
        total += np.sum(np.sin(h) ** 2) + np.sum(h)
    return np.sum(h) + np.sum(s ** 2) + total


XS = np.random.default_rng(2).normal(size=(9, 2))
W = np.array([0.8, -0.6])


@pytest.mark.parametrize("backend", COMPILED)
def test_trees_reverse_and_several_ys_against_central_differences(backend):
    assert_close(dk.jit(lstm_like)(W, XS), lstm_like_numpy(W, XS), rtol=1e-13)
    g_w, g_xs = dk.grad(lstm_like, argnums=(0, 1), backend=backend)(W, XS)
    assert_close(g_w, central_diff(lambda w: lstm_like_numpy(w, XS), W), rtol=1e-7)
    assert_close(g_xs, central_diff(lambda xs: lstm_like_numpy(W, xs), XS), rtol=1e-7)
    assert_close(dk.hessian(lambda w: lstm_like(w, XS), backend=backend)(W),
                 dk.hessian(lambda w: lstm_like(w, XS), backend="forward")(W), rtol=1e-11)
    assert "scan" in prims(dk.grad(lstm_like), W, XS)


def test_against_jax_lax_scan():
    jax = pytest.importorskip("jax", reason="JAX is a peer: pip install diffkit[peers]")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def in_jax(w, xs):
        def step(c, x):
            h = jnp.tanh(c["h"] * w[0] + x * w[1])
            return {"h": h, "s": c["s"] + h * h}, (jnp.sin(h), jnp.sum(h))
        c, (ys, sums) = jax.lax.scan(step, {"h": jnp.array([0.5, -0.1]), "s": jnp.zeros(2)},
                                     xs, reverse=True)
        return jnp.sum(c["h"]) + jnp.sum(c["s"] ** 2) + jnp.sum(ys * ys) + jnp.sum(sums)

    want = jax.grad(in_jax, argnums=(0, 1))(W, XS)
    got = dk.grad(lstm_like, argnums=(0, 1), backend="compiled")(W, XS)
    assert_close(got[0], np.asarray(want[0]), rtol=1e-13)
    assert_close(got[1], np.asarray(want[1]), rtol=1e-13)


def test_nested_loops():
    def f(a):
        def outer(c, x):
            inner = dk.scan(lambda d, z: (dnp.sin(d * a + z), None), c, x * np.ones(3))[0]
            return inner, inner
        return dnp.sum(dk.scan(outer, 0.3, np.arange(4.0))[1])

    def plain(a):
        c, total = 0.3, 0.0
        for x in range(4):
            for _ in range(3):
                c = np.sin(c * a + x)
            total += c
        return total

    assert_close(dk.grad(f, backend="compiled")(0.9), central_diff(plain, 0.9), rtol=1e-8)
    assert prims(dk.grad(f), 0.9).count("scan") == 2


def test_vmap_of_a_compiled_loop_is_one_loop_over_the_batch():
    """vmap of a compiled loop batches its body (one scan equation, not one per example):
    a carry made batched by a batched constant, batched xs stepping along their second
    axis, ys stacked per example, per-example gradients; against each example alone and
    the closed form."""
    f = dk.jit(lambda a: last_state(a, 0.4, B))
    a = np.array([0.5, 0.9, 1.01])
    assert_close(dk.vmap(f)(a), [closed_form(v, 0.4, B)[0] for v in a], rtol=1e-13)
    assert prims(dk.vmap(f), a).count("scan") == 1

    def both(a, b):  # the carry and the ys
        return dk.scan(lambda x, b_t: (a * x + b_t, x * b_t), 0.4, b)

    bs = np.random.default_rng(1).normal(size=(3, 7))
    for in_axes, args in (((0, 0), (a, bs)), ((None, 0), (0.7, bs)), ((0, None), (a, B))):
        c, ys = dk.vmap(dk.jit(both), in_axes=in_axes)(*args)
        for k in range(3):
            one = [v if axis is None else v[k] for v, axis in zip(args, in_axes)]
            x_T, _, _, _ = closed_form(one[0], 0.4, one[1])
            assert_close(c[k], x_T, rtol=1e-13)
            assert_close(ys[k], both(*one)[1], rtol=1e-13)

    def wiggle(a, b):
        return dk.scan(lambda x, b_t: (dnp.sin(a * x) + b_t, None), 0.4, b)[0]

    grads = dk.vmap(dk.grad(wiggle, backend="compiled"))(a, bs)
    for k in range(3):
        assert_close(grads[k], central_diff(lambda v: wiggle(v, bs[k]), a[k]), rtol=1e-7)


def test_a_carry_in_any_memory_layout():
    """A carry that starts as a transpose (Fortran order in numpy) or a broadcast: the
    machine-code loop renews its carries in C order (its copy of a transpose had kept
    Fortran order, and the loop read it as C: the rows came out exchanged)."""
    X = np.arange(6.0).reshape(2, 3)
    xs = np.random.default_rng(4).normal(size=(5, 3, 2))

    def f(X):
        return dk.scan(lambda c, x: (c * 0.5 + x, None), X.T, xs)[0]

    def g(v):
        return dk.scan(lambda c, x: (c * 0.5 + x, None), dnp.broadcast_to(v, (3, 2)), xs)[0]

    def by_hand(c):
        for x in xs:
            c = c * 0.5 + x
        return c

    assert_close(dk.jit(f)(X), by_hand(X.T), rtol=1e-15)
    assert_close(dk.jit(g)(np.array([1.0, -2.0])),
                 by_hand(np.broadcast_to([1.0, -2.0], (3, 2))), rtol=1e-15)


def test_fori_loop_is_a_loop_and_indexing_with_i_unrolls():
    power = lambda a: dk.fori_loop(0, 30, lambda i, v: v * a + i, 1.0)

    def plain(a):
        v = 1.0
        for i in range(30):
            v = v * a + i
        return v

    assert_close(dk.grad(power, backend="compiled")(0.9), central_diff(plain, 0.9), rtol=1e-8)
    assert "scan" in prims(power, 0.9)
    xs = np.arange(5.0)
    indexed = lambda a: dk.fori_loop(0, 5, lambda i, v: v * a + xs[i], 0.0)
    assert "scan" not in prims(indexed, 0.9)  # (a traced index: unrolled, as before)
    assert_close(dk.grad(indexed, backend="compiled")(0.9),
                 sum((4 - t) * 0.9 ** (3 - t) * xs[t] for t in range(4)), rtol=1e-13)


def test_a_loop_closing_over_an_outer_transform():
    """Closure conversion: the compiled function's loop reads the outer grad's ``a``."""
    def outer(a):
        inner = dk.jit(lambda x0: last_state(a, x0, B))
        return inner(0.4)

    for backend in ("reverse", "forward"):
        assert_close(dk.grad(outer, backend=backend)(0.93), closed_form(0.93, 0.4, B)[1],
                     rtol=1e-12)


def test_a_python_number_carry_takes_the_body_dtype_and_mixed_dtypes_unroll():
    count = dk.jit(lambda xs: dk.scan(lambda c, x: (c + x, None), 0, xs)[0])
    assert count(np.array([0.5, 0.25])) == 0.75
    mixed = lambda a: dk.scan(lambda c, x: ((c[0] + 1, c[1] * a + x), None), (0, 1.0), B)[0]
    assert "scan" not in prims(mixed, 0.9)
    n, x_T = dk.jit(mixed)(0.9)
    assert n == len(B) and np.asarray(n).dtype.kind == "i"
    assert_close(x_T, closed_form(0.9, 1.0, B)[0], rtol=1e-13)
    assert_close(dk.grad(lambda a: mixed(a)[1], backend="compiled")(0.9),
                 closed_form(0.9, 1.0, B)[1], rtol=1e-12)


def test_mistakes_inside_a_compiled_loop_are_still_one_line():
    with pytest.raises(dk.DiffkitError, match="must return a pair"):
        dk.jit(lambda xs: dk.scan(lambda c, x: c + x, 0.0, xs))(np.ones(3))
    with pytest.raises(dk.DiffkitError, match="carry must keep"):
        dk.jit(lambda xs: dk.scan(lambda c, x: (c * xs, x), 0.0, xs))(np.ones(3))


@pytest.mark.parametrize("backend", ["reverse", "compiled"])
def test_gradbench_lstm_and_ode_written_as_loops(backend):
    """The evals' loop forms give the hand-derived gradients; compiled, one scan each."""
    from diffkit.gradbench import lstm, ode

    _, ((main, extra), state, seq) = lstm.prepare(lstm.inputs("l=2,c=1024"))
    seq = seq[:40]
    loss = lambda p: lstm.objective_scanned(p[0], p[1], state, seq)
    assert_close(loss((main, extra)), lstm.objective_by_hand(main, extra, state, seq),
                 rtol=1e-13)
    got, want = dk.grad(loss, backend=backend)((main, extra)), \
        lstm.jacobian_by_hand(main, extra, state, seq)
    assert_close(got[0], want[0], rtol=1e-11, atol=1e-15)
    assert_close(got[1], want[1], rtol=1e-11, atol=1e-15)
    x = np.random.default_rng(3).random(50)
    assert_close(dk.grad(lambda v: ode.primal_looped(v, 20)[-1], backend=backend)(x),
                 ode.gradient_by_hand(x, 20), rtol=1e-12, atol=1e-15)
    assert prims(dk.grad(lambda v: ode.primal_looped(v, 20)[-1]), x).count("scan") == 2


def test_on_jax_arrays_the_loop_is_jaxs_own():
    """Under the jax backend the same program's dk.scan / dk.fori_loop are lax.scan /
    lax.fori_loop, so jax.jit compiles one loop too (its jaxpr holds it)."""
    jax = pytest.importorskip("jax", reason="JAX is a peer: pip install diffkit[peers]")
    from diffkit.core import using

    with using(jax.numpy):
        jaxpr = jax.make_jaxpr(lambda a: last_state(a, 0.4, B))(0.9)
        looped = jax.make_jaxpr(lambda a: dk.fori_loop(0, 30, lambda i, v: v * a, 1.0))(0.9)
    assert "scan" in str(jaxpr) and ("while" in str(looped) or "scan" in str(looped))
    g = dk.grad(lambda a: last_state(a, 0.4, B), backend=dk.backend("jax", jit=True))(0.93)
    assert_close(g, closed_form(0.93, 0.4, B)[1], rtol=1e-12)


# ---------------------------------------------------------------- the loop in machine code


def bodies(fun, *args) -> list:
    """The loop bodies of ``fun``'s optimized program (dk.jit's default: fused)."""
    return [e.params["body"] for e in build(fun, args, fuse=True).graph.eqns
            if e.prim.name == "scan"]


def both_ways(body, operands) -> tuple[np.ndarray, np.ndarray]:
    """The loop's packed output run in machine code, and by the body's program per step."""
    from diffkit.transforms.scan_equation import run

    native = run(*operands, body=body)
    kept, body.derived["loop"] = body.derived["loop"], None
    try:
        return native, run(*operands, body=body)
    finally:
        body.derived["loop"] = kept


@pytest.mark.jit
def test_the_lstm_and_ode_loops_run_in_machine_code_as_in_python():
    """Every loop of the two gradients is compiled whole, and gives the Python loop's
    values to the bit (the same kernels, in the same order)."""
    from diffkit.gradbench import lstm, ode

    _, ((main, extra), state, seq) = lstm.prepare(lstm.inputs("l=2,c=1024"))
    seq = seq[:30]
    x = np.random.default_rng(4).random(200)
    cases = [(dk.grad(lambda p: lstm.objective_scanned(p[0], p[1], state, seq)), (main, extra)),
             (dk.grad(lambda v: ode.primal_looped(v, 12)[-1]), x)]
    for grad, arg in cases:
        found = bodies(grad, arg)
        assert len(found) == 2 and all(b.loop() is not None for b in found)
    g = dk.grad(lambda p: lstm.objective_scanned(p[0], p[1], state, seq), backend="compiled")
    want = lstm.jacobian_by_hand(main, extra, state, seq)
    assert_close(g((main, extra))[0], want[0], rtol=1e-11, atol=1e-15)
    body = bodies(dk.grad(lambda v: ode.primal_looped(v, 12)[-1]), x)[0]
    operands = [np.random.default_rng(k).random((body.length, *s) if body.carries <= k <
                                                 body.carries + body.xs else s)
                for k, (s, _) in enumerate(body.inputs)]
    native, python = both_ways(body, operands)
    assert np.array_equal(native, python)


@pytest.mark.jit
@pytest.mark.parametrize("reverse", [False, True])
def test_machine_code_loop_swaps_carries_and_stacks_ys_in_order(reverse):
    """Two carries that trade places each step are both read before either is written;
    with ``reverse`` the y of step t still lands at t."""
    xs = np.random.default_rng(6).normal(size=(7, 3))

    def f(a, b):
        (a, b), ys = dk.scan(lambda c, x: ((c[1], dnp.sin(c[0]) + x), c[0] * 2.0), (a, b), xs,
                             reverse=reverse)
        return a, b, ys

    a0, b0 = np.array([0.1, 0.2, 0.3]), np.array([-1.0, 0.5, 2.0])
    a, b, ys = a0.copy(), b0.copy(), np.empty((7, 3))
    for t in (range(6, -1, -1) if reverse else range(7)):
        ys[t] = a * 2.0
        a, b = b, np.sin(a) + xs[t]
    got = dk.jit(f)(a0, b0)
    assert all(body.loop() is not None for body in bodies(f, a0, b0))
    assert_close(got[0], a, rtol=1e-15)
    assert_close(got[1], b, rtol=1e-15)
    assert_close(got[2], ys, rtol=1e-15)


# ---------------------------------------------------------------- random loops

STEPS = [lambda c, x, w: dnp.sin(c) + x,
         lambda c, x, w: dnp.tanh(c * w + x),
         lambda c, x, w: 0.5 * c * dnp.cos(x),
         lambda c, x, w: c + 0.1 * dnp.tanh(dnp.sum(c * c)) * x,
         lambda c, x, w: dnp.sigmoid(c) * w - x,
         lambda c, x, w: dnp.concatenate([c[1:], c[:1] * w[:1]]) + 0.3 * x]


def test_random_loops_in_machine_code_against_central_differences():
    """Bodies made of random steps (elementwise chains, a sum, a shifted concatenation),
    gradients w.r.t. the initial carry, every x and a weight the body closes over, compiled
    (the loop in machine code where numba's LLVM is installed), against central differences
    of the plain loop; the value against the plain loop."""
    from hypothesis import given, settings, strategies as st

    judged = []

    @settings(max_examples=25, deadline=None)
    @given(st.lists(st.integers(0, len(STEPS) - 1), min_size=1, max_size=4),
           st.integers(1, 12), st.booleans(), st.integers(0, 2**31 - 1))
    def check(picks, steps, reverse, seed):
        rng = np.random.default_rng(seed)
        c0, xs, w = rng.normal(size=3), 0.5 * rng.normal(size=(steps, 3)), rng.normal(size=3)

        def f(c0, xs, w):
            def body(c, x):
                for k in picks:
                    c = STEPS[k](c, x, w)
                return c, dnp.sum(c * x)
            c, ys = dk.scan(body, c0, xs, reverse=reverse)
            return dnp.sum(c * c) + dnp.sum(ys)

        assert_close(dk.jit(f)(c0, xs, w), f(c0, xs, w), rtol=1e-12)
        got = dk.grad(f, argnums=(0, 1, 2), backend="compiled")(c0, xs, w)
        for k, arg in enumerate((c0, xs, w)):
            def part(v, k=k):
                args = [c0, xs, w]
                args[k] = v
                return f(*args)
            assert_close(got[k], central_diff(part, arg), rtol=1e-6)
        judged.append(picks)

    check()
    assert len(judged) == 25


# ---------------------------------------------------------------- while_loop


def newton(a):
    return dk.while_loop(lambda x: abs(x * x - a) > 1e-13 * a, lambda x: 0.5 * (x + a / x), a)


def growth(a):
    """Arrays in the carry, a test on their sum, a value the body closes over."""
    return dk.while_loop(lambda c: dnp.sum(c * c) < 100.0, lambda c: c * a + 0.1,
                         np.linspace(0.5, 1.0, 5))


def growth_numpy(a):
    c = np.linspace(0.5, 1.0, 5)
    while np.sum(c * c) < 100.0:
        c = c * a + 0.1
    return c


@pytest.mark.parametrize("backend", COMPILED)
def test_while_loop_compiled_value_and_forward_mode(backend):
    """One while_loop equation; √a and 1/(2√a) from Newton's iteration; arrays in the
    carry against the numpy loop and its forward derivative against central differences
    (the count of iterations is locally constant)."""
    roots = np.array([0.5, 2.0, 9.0, 100.0])
    for a in roots:
        assert_close(dk.jit(newton)(a), np.sqrt(a), rtol=1e-15)
        assert_close(dk.jvp(newton, (a,), (1.0,), backend=backend)[1], 0.5 / np.sqrt(a),
                     rtol=1e-10)
    assert "while_loop" in prims(newton, 2.0)
    assert_close(dk.jit(growth)(1.3), growth_numpy(1.3), rtol=1e-15)
    assert_close(dk.jacobian(growth, backend=backend)(1.3),
                 central_diff(growth_numpy, 1.3, h=1e-7), rtol=1e-6)
    assert_close(dk.vmap(dk.jit(newton))(roots), np.sqrt(roots), rtol=1e-15)


def test_vmap_of_a_compiled_while_loop_is_one_loop_each_example_stopping_on_its_own():
    """One while_loop over the batch while any example's test holds; an example whose
    test failed keeps its carry: Newton's roots, a doubling that stops at different
    steps (its counter tells), and the forward derivative per example."""
    roots = np.array([0.5, 2.0, 9.0, 100.0])
    assert prims(dk.vmap(dk.jit(newton)), roots).count("while_loop") == 1
    assert_close(dk.vmap(dk.jit(newton))(roots), np.sqrt(roots), rtol=1e-15)
    slopes = dk.vmap(lambda a: dk.jvp(newton, (a,), (1.0,), backend="compiled")[1])(roots)
    assert_close(slopes, 0.5 / np.sqrt(roots), rtol=1e-10)

    def doubling(a):  # (x, steps) until x passes a: 2^steps, ceil(log2 a) steps
        return dk.while_loop(lambda c: c[0] < a, lambda c: (2.0 * c[0], c[1] + 1.0), (1.0, 0.0))

    x, steps = dk.vmap(dk.jit(doubling))(np.array([3.0, 10.0, 100.0, 0.5]))
    assert x.tolist() == [4.0, 16.0, 128.0, 1.0] and steps.tolist() == [2.0, 4.0, 7.0, 0.0]


@pytest.mark.jit
def test_while_loop_runs_in_machine_code():
    for f, arg in ((newton, 2.0), (growth, 1.3)):
        (loop,) = [e.params["loop"] for e in build(f, (arg,), fuse=True).graph.eqns
                   if e.prim.name == "while_loop"]
        assert loop.loop() is not None


def test_while_loop_reverse_mode_is_refused_in_one_line_under_compiled():
    with pytest.raises(dk.NotApplicable) as err:
        dk.grad(newton, backend="compiled")(4.0)
    assert str(err.value).startswith("reverse mode through dk.while_loop") \
        and "dk.fori_loop" in str(err.value) and "\n" not in str(err.value)
    assert_close(dk.grad(newton, backend="reverse")(4.0), 0.25, rtol=1e-10)  # eager: yes
    with pytest.raises(dk.DiffkitError, match="boolean scalar"):
        dk.jit(lambda a: dk.while_loop(lambda x: x * 1.0, lambda x: x * 0.5, a))(2.0)
