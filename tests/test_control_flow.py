"""dk.scan, dk.fori_loop, dk.while_loop, dk.cond, dk.switch: JAX's names and meaning in
every backend and transform.

Values and derivatives against closed forms (a linear recurrence, a power recurrence,
Newton's square root, piecewise functions), against central differences of the plain
numpy program, and against JAX as a second reference; vmap of each; every mistake one line.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, central_diff

import diffkit as dk
import diffkit.numpy as dnp

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)

EXACT = ["reverse", "forward", "compiled", "compiled[fuse=false]"]
BACKENDS = EXACT + ["numeric"]


def rtol(backend: str) -> float:
    return 1e-6 if backend == "numeric" else 1e-13


# ---------------------------------------------------------------- scan: x_{t+1} = a x_t + b_t

A, X0, B = 0.7, 0.3, np.array([1.0, -0.5, 2.0, 0.25, -1.5])


def recurrence(a, x0, b):
    """``(x_T, [x_0 … x_{T-1}])``."""
    return dk.scan(lambda x, b_t: (a * x + b_t, x), x0, b)


def states(a, x0, b):
    xs = [x0]
    for b_t in b:
        xs.append(a * xs[-1] + b_t)
    return np.array(xs)


def closed_form_gradient(a, x0, b):
    """d x_T / d(a, x0, b): x_T = a^T x0 + Σ a^(T-1-t) b_t, so ∂a = Σ a^(T-1-t) x_t."""
    T, x = len(b), states(a, x0, b)
    powers = a ** np.arange(T - 1, -1, -1.0)  # a^(T-1-t)
    return float(np.sum(powers * x[:T])), a ** T, powers


def test_scan_values_are_the_recurrence():
    x_T, ys = recurrence(A, X0, B)
    x = states(A, X0, B)
    assert_close(x_T, x[-1], rtol=1e-15)
    assert_close(ys, x[:-1], rtol=1e-15)


@pytest.mark.parametrize("backend", BACKENDS + ["symbolic"])
def test_scan_gradient_is_the_closed_form(backend):
    if backend == "symbolic":  # one argument: the closed form in b
        g = dk.grad(lambda b: recurrence(A, X0, b)[0], backend=backend)(B)
        assert_close(g, closed_form_gradient(A, X0, B)[2], rtol=1e-13)
        return
    g = dk.grad(lambda a, x0, b: recurrence(a, x0, b)[0], argnums=(0, 1, 2),
                backend=backend)(A, X0, B)
    for got, want in zip(g, closed_form_gradient(A, X0, B)):
        assert_close(got, want, rtol=rtol(backend))


def test_scan_jacobian_of_the_stacked_ys_matches_central_differences():
    jac = dk.jacobian(lambda b: recurrence(A, X0, b)[1] ** 2)(B)
    plain = lambda b: states(A, X0, b)[:-1] ** 2  # noqa: E731
    assert_close(jac, central_diff(plain, B), rtol=1e-8)
    assert_close(dk.jacobian(lambda b: recurrence(A, X0, b)[1] ** 2, backend="compiled")(B),
                 jac, rtol=1e-14)


def test_scan_hessian_nests():
    """d²x_T/da² = Σ_t (T-1-t)(T-2-t) a^(T-3-t) x0-terms …: checked against central
    differences of the closed-form gradient, reverse-over-forward and compiled alike."""
    loss = lambda a: recurrence(a, X0, B)[0]  # noqa: E731
    want = central_diff(lambda a: closed_form_gradient(float(a), X0, B)[0], np.array(A), 1e-5)
    for backend in ("reverse", "forward", "compiled"):
        assert_close(dk.hessian(loss, backend=backend)(A), want, rtol=1e-8)


def test_scan_reverse_trees_and_length():
    carry, ys = dk.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(3.0), reverse=True)
    assert carry == 3.0 and ys.tolist() == [0.0, 2.0, 0.0]  # ys[t] belongs to xs[t], as JAX
    (s, p), out = dk.scan(lambda c, x: ((c[0] + x["u"], c[1] * x["v"]), {"partial": c[0]}),
                          (0.0, 1.0), {"u": np.ones(3), "v": np.arange(1.0, 4.0)})
    assert (s, p) == (3.0, 6.0) and out["partial"].tolist() == [0.0, 1.0, 2.0]
    assert dk.scan(lambda c, _: (c + 1.0, None), 0.0, None, length=4) == (4.0, None)
    carry, (ys,) = dk.scan(lambda c, x: (c, (2.0 * x,)), 5.0, np.zeros((0, 2)))
    assert carry == 5.0 and ys.shape == (0, 2)


def test_scan_vmaps_over_the_carry_and_over_xs():
    starts = np.array([X0, 1.0, -2.0])
    x_T, ys = dk.vmap(lambda x0: recurrence(A, x0, B))(starts)
    for k, x0 in enumerate(starts):
        assert_close(x_T[k], states(A, x0, B)[-1], rtol=1e-15)
        assert_close(ys[k], states(A, x0, B)[:-1], rtol=1e-15)
    bs = np.stack([B, 2.0 * B, B[::-1]])
    g = dk.vmap(dk.grad(lambda b: recurrence(A, X0, b)[0]))(bs)
    assert_close(g, np.stack([closed_form_gradient(A, X0, b)[2] for b in bs]), rtol=1e-14)


# ---------------------------------------------------------------- fori_loop: v ← a v + i


def power_sum(a):
    return dk.fori_loop(0, 5, lambda i, v: v * a + i, 1.0)


def power_sum_gradient(a, n=5):
    """v_n = a^n + Σ_{i<n} i a^(n-1-i)."""
    return n * a ** (n - 1) + sum(i * (n - 1 - i) * a ** (n - 2 - i) for i in range(n - 1))


@pytest.mark.parametrize("backend", BACKENDS + ["symbolic"])
def test_fori_loop_gradient_is_the_closed_form(backend):
    a = 1.3
    assert_close(power_sum(a), a ** 5 + sum(i * a ** (4 - i) for i in range(5)), rtol=1e-15)
    assert_close(dk.grad(power_sum, backend=backend)(a), power_sum_gradient(a),
                 rtol=rtol(backend))


def test_fori_loop_counts_with_python_ints_and_vmaps_over_bounds():
    assert dk.fori_loop(1, 6, lambda i, v: v * i, 1) == 120  # i is a Python int
    assert dk.fori_loop(3, 1, lambda i, v: v + 1.0, 0.0) == 0.0  # an empty range
    doubled = dk.vmap(lambda n: dk.fori_loop(0, n, lambda i, v: 2.0 * v, 1.0))
    assert doubled(np.array([1, 3, 5])).tolist() == [2.0, 8.0, 32.0]  # JAX: a while_loop
    assert_close(dk.vmap(dk.grad(power_sum))(np.array([0.5, 1.3])),
                 [power_sum_gradient(0.5), power_sum_gradient(1.3)], rtol=1e-14)


# ---------------------------------------------------------------- while_loop: Newton for √a


def newton_sqrt(a):
    return dk.while_loop(lambda x: abs(x * x - a) > 1e-13 * a, lambda x: 0.5 * (x + a / x), a)


ROOTS = np.array([0.5, 2.0, 9.0, 100.0])


def test_while_loop_newton_converges_and_forward_mode_gives_one_over_two_root():
    for a in ROOTS:
        assert_close(newton_sqrt(a), np.sqrt(a), rtol=1e-15)
        _, da = dk.jvp(newton_sqrt, (a,), (1.0,))
        assert_close(da, 0.5 / np.sqrt(a), rtol=1e-10)  # the iterates' derivative converges too
        assert_close(dk.grad(newton_sqrt, backend="forward")(a), 0.5 / np.sqrt(a), rtol=1e-10)
        assert_close(dk.grad(newton_sqrt, backend="numeric")(a), 0.5 / np.sqrt(a), rtol=1e-6)


def test_while_loop_reverse_mode_records_the_iterations_that_ran():
    """Unlike JAX (which refuses reverse mode of while_loop), the tape holds the actual
    iterations: grad and forward-over-reverse Hessians work."""
    for a in ROOTS:
        assert_close(dk.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-10)
        assert_close(dk.hessian(newton_sqrt)(a), -0.25 * a ** -1.5, rtol=1e-7)
    assert_close(dk.derivatives(newton_sqrt, 2)(4.0), [2.0, 0.25, -0.03125], rtol=1e-9)


def test_while_loop_vmap_runs_until_every_example_stops():
    grow = dk.vmap(lambda a: dk.while_loop(lambda x: x < a, lambda x: 2.0 * x, 1.0))
    assert grow(np.array([3.0, 10.0, 0.5])).tolist() == [4.0, 16.0, 1.0]  # as JAX
    assert_close(dk.vmap(newton_sqrt)(ROOTS), np.sqrt(ROOTS), rtol=1e-15)
    assert_close(dk.vmap(dk.grad(newton_sqrt))(ROOTS), 0.5 / np.sqrt(ROOTS), rtol=1e-10)


def test_while_loop_vmap_sends_no_nan_from_steps_an_example_discards():
    """An example that stopped still runs the body (√ of a negative number here); the
    select keeps its carry and the gate keeps the NaN out of its derivative."""
    def loop(a):
        return dk.while_loop(lambda x: x > 2.0, lambda x: dnp.sqrt(x - 2.0) + 1.0, a)

    a = np.array([1.5, 11.0, 3.0])
    one_by_one = [dk.grad(loop)(v) for v in a]
    chain = 0.5 / 3.0 * 0.5 / np.sqrt(2.0) * 0.5 / np.sqrt(np.sqrt(2.0) - 1.0)  # 11, 4, 1 + √2
    assert_close(one_by_one, [1.0, chain, 0.5], rtol=1e-14)
    with np.errstate(all="ignore"):
        assert_close(dk.vmap(dk.grad(loop))(a), one_by_one, rtol=1e-15)
        assert_close(dk.grad(lambda a: dnp.sum(dk.vmap(loop)(a)))(a), one_by_one, rtol=1e-15)
        assert_close(np.diag(dk.jacobian(dk.vmap(loop), backend="forward")(a)), one_by_one,
                     rtol=1e-15)


def test_while_loop_under_compiled_goes_forward_and_refuses_reverse_in_one_line():
    """A traced predicate: one while_loop equation; forward mode through it (the closed
    form 1/(2 sqrt a)); reverse mode refused as JAX refuses it, naming dk.fori_loop."""
    assert_close(dk.jvp(newton_sqrt, (4.0,), (1.0,), backend="compiled")[1], 0.25, rtol=1e-12)
    with pytest.raises(dk.NotApplicable) as err:
        dk.grad(newton_sqrt, backend="compiled")(4.0)
    msg = str(err.value)
    assert msg.startswith("reverse mode through dk.while_loop") and "dk.fori_loop" in msg \
        and "\n" not in msg
    def counted(x):  # a Python counter: unrolled
        return dk.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]

    assert dk.grad(counted, backend="compiled")(2.0) == 12.0


# ---------------------------------------------------------------- cond and switch


def piecewise(x):
    return dk.cond(x < 0.0, lambda x: x ** 2, dnp.sin, x)


def three_pieces(x):
    index = (x > 0.0) * 1 + (x > 2.0) * 1
    return dk.switch(index, [lambda x: -x, lambda x: x * x, dnp.log], x)


POINTS = [-2.0, 0.5, 3.0]


@pytest.mark.parametrize("backend", BACKENDS + ["symbolic"])
def test_cond_gradient_is_the_piece_taken(backend):
    for x in POINTS:
        want = 2 * x if x < 0 else np.cos(x)
        assert_close(dk.grad(piecewise, backend=backend)(x), want, rtol=rtol(backend))


@pytest.mark.filterwarnings("ignore:invalid value")  # (log(-2) computed, not taken)
@pytest.mark.parametrize("backend", BACKENDS)
def test_switch_gradient_is_the_piece_taken(backend):
    for x, want in zip(POINTS, [-1.0, 1.0, 1.0 / 3.0]):
        assert_close(dk.grad(three_pieces, backend=backend)(x), want, rtol=rtol(backend))


def test_switch_clamps_its_index_and_vmaps():
    pieces = [lambda x: x, lambda x: x * x, dnp.log]
    assert [float(dk.switch(k, pieces, 3.0)) for k in (-5, 0, 1, 2, 9)] == \
        [3.0, 3.0, 9.0, float(np.log(3.0)), float(np.log(3.0))]
    index, x = np.array([-3, 1, 2, 9]), np.array([2.0, 3.0, 5.0, 4.0])
    assert_close(dk.vmap(lambda i, x: dk.switch(i, pieces, x))(index, x),
                 [2.0, 9.0, np.log(5.0), np.log(4.0)], rtol=1e-15)
    assert_close(dk.vmap(dk.grad(lambda i, x: dk.switch(i, pieces, x), argnums=1))(index, x),
                 [1.0, 6.0, 0.2, 0.25], rtol=1e-15)


def test_cond_vmap_computes_both_branches_and_selects():
    x = np.array(POINTS)
    assert_close(dk.vmap(piecewise)(x), np.where(x < 0, x ** 2, np.sin(x)), rtol=1e-15)
    want = np.where(x < 0, 2 * x, np.cos(x))
    assert_close(dk.vmap(dk.grad(piecewise))(x), want, rtol=1e-15)
    assert_close(dk.grad(lambda x: dnp.sum(dk.vmap(piecewise)(x)))(x), want, rtol=1e-15)
    assert_close(dk.vmap(dk.grad(piecewise, backend="compiled"))(x), want, rtol=1e-15)


def root_or_negation(x):
    return dk.cond(x > 0, dnp.sqrt, lambda x: -x, x)


def root_or_negation_closed_over(x):
    return dk.cond(x > 0, lambda: dnp.sqrt(x), lambda: -x)


@pytest.mark.filterwarnings("ignore:invalid value")  # (sqrt(-1) computed, not taken)
def test_a_traced_predicate_selects_and_sends_no_nan_into_the_gradient():
    """Under compiled both branches run on x = -1: √-1 is NaN, and its derivative must not
    come back as 0 · NaN, whether the branch takes x as an operand or closes over it."""
    for f in (root_or_negation, root_or_negation_closed_over):
        for backend in ("compiled", "compiled[fuse=false]"):
            assert dk.grad(f, backend=backend)(-1.0) == -1.0
            assert dk.grad(f, backend=backend)(4.0) == 0.25
        assert dk.jvp(f, (-1.0,), (1.0,), backend="compiled")[1] == -1.0
        assert dk.jit(f)(-4.0) == 4.0 and dk.jit(f)(4.0) == 2.0
    assert dk.jit(dk.grad(root_or_negation))(-1.0) == -1.0  # a tape inside the trace
    text = str(dk.make_graph(root_or_negation)(-1.0))
    assert "gate(" in text and "select(" in text and "sqrt(" in text
    x = np.array([4.0, -1.0])  # under vmap: the operands are gated too
    assert dk.vmap(dk.grad(root_or_negation))(x).tolist() == [0.25, -1.0]
    assert dk.grad(lambda x: dnp.sum(dk.vmap(root_or_negation)(x)))(x).tolist() == [0.25, -1.0]


def test_cond_on_the_symbolic_backend_is_a_piecewise():
    d = dk.closed_form(piecewise, 0.5, kind="derivative")
    assert str(d.expression) == "Piecewise((2*x, x < 0), (cos(x), True))"


def test_taylor_mode_runs_through_branches_and_loops():
    assert_close(dk.derivatives(piecewise, 2)(1.0), [np.sin(1.0), np.cos(1.0), -np.sin(1.0)],
                 rtol=1e-15)
    series = dk.derivatives(lambda x0: recurrence(A, x0, B)[0], 2)(X0)  # linear in x0
    assert_close(series, [states(A, X0, B)[-1], A ** len(B), 0.0], rtol=1e-15)


# ---------------------------------------------------------------- one clear line per mistake


@pytest.mark.parametrize("call, words", [
    (lambda: dk.scan(lambda c, x: ((c, c), x), (1.0, 2.0), np.ones(3)),
     r"f's carry has the structure \(\(\*, \*\), \(\*, \*\)\) but init has \(\*, \*\)"),
    (lambda: dk.scan(lambda c, x: (np.ones(3), x), np.ones(2), np.ones(3)),
     r"f's carry is float64\[3\] but init is float64\[2\] \(the shapes differ\)"),
    (lambda: dk.scan(lambda c, x: ((c[0], c[1] + x), x), (0.0, np.zeros(2, np.float32)),
                     np.ones((3, 2))), r"carry\[1\] is float64\[2\] but init\[1\] is float32"),
    (lambda: dk.scan(lambda c, x: c + x, 0.0, np.ones(3)), "must return a pair"),
    (lambda: dk.scan(lambda c, x: (c, x), 0.0, None), "give length"),
    (lambda: dk.scan(lambda c, x: (c, x), 0.0, {"a": np.ones(3), "b": np.ones(4)}),
     r"xs\['a'\] has 3, xs\['b'\] has 4"),
    (lambda: dk.scan(lambda c, x: (c, x), 0.0, np.ones(3), length=4), "length=4 but xs has 3"),
    (lambda: dk.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0),
     r"pred must be a scalar, got shape \(2,\).*dnp.where"),
    (lambda: dk.vmap(lambda x: dk.cond(x > 0, lambda: 1.0, lambda: np.ones(2)))(np.ones(2)),
     r"false_fun's output is float64\[2\] but true_fun's output is a number"),
    (lambda: dk.grad(lambda x: dk.cond(x > 0, lambda x: x, lambda x: (x, x), x),
                     backend="compiled")(1.0), "structure"),
    (lambda: dk.cond(True, 1.0, lambda: 2.0), "true_fun must be a function"),
    (lambda: dk.switch(1.0, [lambda: 1.0]), "index must be an integer"),
    (lambda: dk.switch(1, []), "branches is empty"),
    (lambda: dk.fori_loop(0.0, 3, lambda i, v: v, 1.0), "lower must be an integer"),
    (lambda: dk.fori_loop(0, 3, lambda i, v: (v, v), 1.0), "body_fun's result has the structure"),
    (lambda: dk.while_loop(lambda x: x, lambda x: x - 1.0, 3.0), "must return a boolean scalar"),
    (lambda: dk.while_loop(lambda x: x < 3, lambda x: np.ones(2) + x, 0.0),
     r"body_fun's result is float64\[2\] but init_val is a number"),
])
def test_mistakes_are_one_clear_line(call, words):
    with pytest.raises(dk.DiffkitError, match=words) as err:
        call()
    assert "\n" not in str(err.value)


def test_a_python_branch_on_a_traced_value_names_the_structured_form():
    def branch(x):
        if x > 0:
            return x
        return -x

    def loop(x):
        while x > 0:
            x = x - 1.0
        return x

    for f, names in ((branch, "dk.cond(pred, true_fun, false_fun, *operands)"),
                     (loop, "dk.fori_loop(lower, upper, body_fun, init_val)")):
        with pytest.raises(dk.NotApplicable) as err:
            dk.grad(f, backend="compiled")(1.0)
        assert names in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(dk.DiffkitError, match=r"dk.cond\(pred.*dk.while_loop"):
        dk.vmap(branch)(np.ones(2))


# ---------------------------------------------------------------- JAX as a second reference


@pytest.mark.jax
def test_scan_and_fori_loop_match_jax(jax):
    lax, jnp = jax.lax, jax.numpy

    def jax_recurrence(a, x0, b):
        return lax.scan(lambda x, b_t: (a * x + b_t, x), x0, b)

    for reverse in (False, True):
        ours = dk.scan(lambda c, x: (c * A + x, c * x), X0, B, reverse=reverse)
        theirs = lax.scan(lambda c, x: (c * A + x, c * x), X0, jnp.asarray(B), reverse=reverse)
        assert_close(ours[0], theirs[0], rtol=1e-15)
        assert_close(ours[1], theirs[1], rtol=1e-15)
    g = dk.grad(lambda a, x0, b: dnp.sum(recurrence(a, x0, b)[1] ** 2), argnums=(0, 1, 2))
    gj = jax.grad(lambda a, x0, b: jnp.sum(jax_recurrence(a, x0, b)[1] ** 2), argnums=(0, 1, 2))
    for ours, theirs in zip(g(A, X0, B), gj(A, X0, jnp.asarray(B))):
        assert_close(ours, theirs, rtol=1e-13)
    assert_close(dk.grad(power_sum)(1.3),
                 jax.grad(lambda a: lax.fori_loop(0, 5, lambda i, v: v * a + i, 1.0))(1.3),
                 rtol=1e-14)


@pytest.mark.jax
def test_while_loop_matches_jax_forward_where_jax_refuses_reverse(jax):
    lax = jax.lax

    def jax_newton(a):
        return lax.while_loop(lambda x: abs(x * x - a) > 1e-13 * a, lambda x: 0.5 * (x + a / x), a)

    for a in ROOTS:
        assert_close(newton_sqrt(a), jax_newton(a), rtol=1e-15)
        assert_close(dk.jvp(newton_sqrt, (a,), (1.0,))[1], jax.jvp(jax_newton, (a,), (1.0,))[1],
                     rtol=1e-13)
        assert_close(dk.grad(newton_sqrt)(a), jax.jvp(jax_newton, (a,), (1.0,))[1], rtol=1e-13)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(jax_newton)(4.0)
    grow = jax.vmap(lambda a: lax.while_loop(lambda x: x < a, lambda x: 2.0 * x, 1.0))
    ours = dk.vmap(lambda a: dk.while_loop(lambda x: x < a, lambda x: 2.0 * x, 1.0))
    a = np.array([3.0, 10.0, 0.5])
    assert ours(a).tolist() == np.asarray(grow(a)).tolist()


@pytest.mark.jax
def test_cond_and_switch_match_jax_under_vmap_and_grad(jax):
    lax, jnp = jax.lax, jax.numpy
    jax_root = lambda x: lax.cond(x > 0, jnp.sqrt, lambda x: -x, x)  # noqa: E731
    x = np.array([4.0, -1.0, 0.25])
    with np.errstate(all="ignore"):
        assert_close(dk.vmap(dk.grad(root_or_negation))(x), jax.vmap(jax.grad(jax_root))(x),
                     rtol=1e-15)
        assert_close(dk.grad(lambda x: dnp.sum(dk.vmap(root_or_negation)(x)))(x),
                     jax.grad(lambda x: jnp.sum(jax.vmap(jax_root)(x)))(x), rtol=1e-15)
    for v in (-1.0, 4.0):
        assert_close(dk.grad(root_or_negation, backend="compiled")(v),
                     jax.jit(jax.grad(jax_root))(v), rtol=1e-15)
    pieces = [lambda x: -x, lambda x: x * x, jnp.log]
    jax_three = lambda x: lax.switch((x > 0) * 1 + (x > 2) * 1, pieces, x)  # noqa: E731
    for v in POINTS:
        assert_close(three_pieces(v), jax_three(v), rtol=1e-15)
        assert_close(dk.grad(three_pieces)(v), jax.grad(jax_three)(v), rtol=1e-15)
    index = np.array([-3, 1, 2, 9])
    assert_close(dk.vmap(lambda i: dk.switch(i, [lambda: 1.0, lambda: 2.0, lambda: 3.0]))(index),
                 jax.vmap(lambda i: lax.switch(i, [lambda: 1.0, lambda: 2.0, lambda: 3.0]))(index),
                 rtol=0)
