"""dk.odeint: every adjoint way against closed forms and jax.experimental.ode.odeint, the
discrete adjoint against JAX differentiating the same RK4 steps, memory of the continuous
adjoint against the discrete one."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp

ADJOINTS = ("discrete", "checkpointed", "continuous", "forward")
TIGHT = {"rtol": 1e-11, "atol": 1e-11}


def logistic(y, t, r, k):
    return r * y * (1.0 - y / k)


def logistic_closed(y0, t, r, k):
    e = np.exp(r * t)
    return k * y0 * e / (k + y0 * (e - 1.0))


def lotka_volterra(y, t, a, b, c, d):
    return dnp.stack([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


@pytest.mark.jax
@pytest.mark.parametrize("adjoint", ADJOINTS)
@pytest.mark.parametrize("backend", ("reverse", "forward"))
def test_logistic_gradient_matches_the_closed_form(adjoint: str, backend: str, jax,
                                                   logistic_jax_odeint) -> None:
    t = np.array([0.0, 0.5, 2.0, 4.0])
    ours = lambda y0, r, k: dnp.sum(dk.odeint(logistic, y0, t, r, k, adjoint=adjoint,  # noqa
                                              **TIGHT) ** 2)
    exact = jax.grad(lambda y0, r, k: jax.numpy.sum(  # the closed form, differentiated by JAX
        (k * y0 * jax.numpy.exp(r * t) / (k + y0 * (jax.numpy.exp(r * t) - 1.0))) ** 2),
        argnums=(0, 1, 2))
    args = (0.2, 1.3, 2.0)
    np.testing.assert_allclose(dk.odeint(logistic, 0.2, t, 1.3, 2.0, **TIGHT),
                               logistic_closed(0.2, t, 1.3, 2.0), rtol=1e-9)
    got = dk.grad(ours, argnums=(0, 1, 2), backend=backend)(*args)
    np.testing.assert_allclose(got, exact(*args), rtol=1e-7)
    np.testing.assert_allclose(got, logistic_jax_odeint, rtol=1e-7)


@pytest.fixture(scope="module")
def logistic_jax_odeint(jax):
    """JAX's odeint gradient of the logistic loss above."""
    from jax.experimental.ode import odeint as jax_odeint
    t = jax.numpy.array([0.0, 0.5, 2.0, 4.0])
    loss = lambda y0, r, k: jax.numpy.sum(jax_odeint(logistic, y0, t, r, k, **TIGHT) ** 2)  # noqa
    return jax.grad(loss, argnums=(0, 1, 2))(0.2, 1.3, 2.0)


LV_T = np.linspace(0.0, 4.0, 5)
LV_PARAMS = (1.5, 1.0, 3.0, 1.0)
LV_Y0 = np.array([1.0, 0.5])


@pytest.fixture(scope="module")
def lv_reference(jax):
    """JAX's odeint gradient of Σ y² on Lotka–Volterra in y0, t and the four parameters."""
    from jax.experimental.ode import odeint as jax_odeint
    jnp = jax.numpy
    jlv = lambda y, t, a, b, c, d: jnp.stack([a * y[0] - b * y[0] * y[1],  # noqa: E731
                                               -c * y[1] + d * y[0] * y[1]])
    loss = lambda y0, t, *p: jnp.sum(jax_odeint(jlv, y0, t, *p, **TIGHT) ** 2)  # noqa: E731
    return jax.grad(loss, argnums=tuple(range(6)))(jnp.array(LV_Y0), jnp.array(LV_T),
                                                   *LV_PARAMS)


@pytest.mark.jax
@pytest.mark.parametrize("adjoint", ADJOINTS)
def test_lotka_volterra_matches_jax_odeint(adjoint: str, lv_reference) -> None:
    def ours(y0, t, *p):
        return dnp.sum(dk.odeint(lotka_volterra, y0, t, *p, adjoint=adjoint, **TIGHT) ** 2)

    got = dk.grad(ours, argnums=tuple(range(6)))(LV_Y0, LV_T, *LV_PARAMS)
    for g, e in zip(got, lv_reference):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


def _jax_rk4(jax, f, y, t0, t1, n, *p):
    h = (t1 - t0) / n
    for i in range(n):
        s = t0 + i * h
        k1 = f(y, s, *p)
        k2 = f(y + h / 2 * k1, s + h / 2, *p)
        k3 = f(y + h / 2 * k2, s + h / 2, *p)
        k4 = f(y + h * k3, s + h, *p)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.fixture(scope="module")
def rk4_reference(jax):
    """JAX differentiating 40 RK4 steps of Lotka–Volterra, in y0, t1 and a."""
    jnp = jax.numpy
    jlv = lambda y, t, a, b, c, d: jnp.stack([a * y[0] - b * y[0] * y[1],  # noqa: E731
                                               -c * y[1] + d * y[0] * y[1]])
    loss = lambda y0, t1, a: jnp.sum(_jax_rk4(jax, jlv, y0, 0.0, t1, 40, a,  # noqa: E731
                                              *LV_PARAMS[1:]) ** 2)
    return jax.grad(loss, argnums=(0, 1, 2))(jnp.array(LV_Y0), 2.0, 1.5)


@pytest.mark.parametrize("adjoint", ADJOINTS)
@pytest.mark.parametrize("backend", ("reverse", "forward", "compiled"))
def test_discrete_adjoint_is_the_derivative_of_the_rk4_steps(adjoint: str, backend: str,
                                                             rk4_reference) -> None:
    """Every way but the continuous adjoint is exact for the scheme (under forward mode the
    continuous way pushes tangents through the steps too); the compiled backend traces the
    fixed steps as one program (the continuous rule's backward integration too, when its
    graph is differentiated with the rules)."""
    def ours(y0, t1, a):
        ys = dk.odeint(lotka_volterra, y0, dnp.stack([0.0, t1]), a, *LV_PARAMS[1:],
                       method="rk4", steps=40, adjoint=adjoint)
        return dnp.sum(ys[-1] ** 2)

    got = dk.grad(ours, argnums=(0, 1, 2), backend=backend)(LV_Y0, 2.0, 1.5)
    exact_for_the_scheme = adjoint != "continuous" or backend == "forward"
    for g, e in zip(got, rk4_reference):
        np.testing.assert_allclose(g, e, rtol=1e-12 if exact_for_the_scheme else 1e-3,
                                   atol=1e-13)


def test_continuous_adjoint_differentiates_the_equation_not_the_scheme() -> None:
    """At a coarse fixed step the discrete adjoint is exact for the RK4 solution, the
    continuous one approximates the true derivative: they differ by the integration error."""
    t = np.array([0.0, 3.0])
    loss = lambda k, adjoint: dk.odeint(lambda y, t, k: -k * y, 1.0, t, k,  # noqa: E731
                                        method="rk4", steps=6, adjoint=adjoint)[-1]
    k = 0.9
    h = 0.5
    growth = 1 - k * h + (k * h) ** 2 / 2 - (k * h) ** 3 / 6 + (k * h) ** 4 / 24  # RK4's factor
    d_growth = -h + k * h * h - k * k * h ** 3 / 2 + k ** 3 * h ** 4 / 6
    discrete = float(dk.grad(lambda k: loss(k, "discrete"))(k))
    assert abs(discrete - 6 * growth ** 5 * d_growth) < 1e-14
    continuous = float(dk.grad(lambda k: loss(k, "continuous"))(k))
    true = -3.0 * np.exp(-3.0 * k)
    assert abs(continuous - discrete) > 1e-5  # different derivatives ...
    assert abs(continuous - true) < 1e-3 and abs(discrete - true) < 1e-3  # ... of one answer


@pytest.mark.jax
def test_pytree_state_neural_ode_and_vmap(jax) -> None:
    """A dict state and a dict of MLP weights, against JAX's odeint."""
    from jax.experimental.ode import odeint as jax_odeint
    jnp = jax.numpy
    rng = np.random.default_rng(0)
    w = {"w1": 0.5 * rng.standard_normal((2, 8)), "w2": 0.5 * rng.standard_normal((8, 2))}

    def ours(y, t, w):
        z = dnp.concatenate([y["x"], y["v"]])
        dz = dnp.tanh(z @ w["w1"]) @ w["w2"]
        return {"x": dz[:1], "v": dz[1:]}

    def theirs(z, t, w):
        return jnp.tanh(z @ w["w1"]) @ w["w2"]

    t = np.linspace(0.0, 1.0, 3)
    y0 = {"x": np.array([1.0]), "v": np.array([-0.5])}
    expected = jax.grad(lambda w: jnp.sum(jax_odeint(theirs, jnp.array([1.0, -0.5]), t, w,
                                                     **TIGHT) ** 2))(w)
    for adjoint in ("continuous", "discrete"):
        got = dk.grad(lambda w: sum(dnp.sum(v ** 2) for v in dk.odeint(
            ours, y0, t, w, adjoint=adjoint, **TIGHT).values()))(w)
        for name in w:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-7, atol=1e-10)
    ks = np.array([0.5, 1.0, 2.0])
    decay = lambda k, **kw: dk.odeint(lambda y, t, k: -k * y, 1.0, t, k,  # noqa: E731
                                      adjoint="continuous", **kw)[-1]
    np.testing.assert_allclose(dk.jacobian(dk.vmap(lambda k: decay(k, **TIGHT)))(ks),
                               np.diag(-np.exp(-ks)), rtol=1e-8)
    np.testing.assert_allclose(dk.vmap(dk.grad(lambda k: decay(k, method="rk4")))(ks),
                               -np.exp(-ks), rtol=1e-8)
    with pytest.raises(dk.NotApplicable, match="method='rk4'"):
        dk.vmap(dk.grad(decay))(ks)


def test_hessian_through_the_continuous_adjoint() -> None:
    f = lambda k: dk.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 2.0]), k,  # noqa: E731
                            adjoint="continuous", **TIGHT)[-1]
    assert abs(float(dk.hessian(f)(0.5)) - 4.0 * np.exp(-1.0)) < 1e-6


def test_stiff_robertson_is_refused_in_one_line() -> None:
    def robertson(y, t):
        return dnp.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                          0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                          3e7 * y[1] ** 2])

    with pytest.raises(dk.NotApplicable, match="stiff") as err:
        dk.odeint(robertson, np.array([1.0, 0.0, 0.0]), np.array([0.0, 100.0]))
    assert "\n" not in str(err.value)
    with pytest.raises(dk.NotApplicable, match="overflowed"), np.errstate(all="ignore"):
        dk.odeint(robertson, np.array([1.0, 0.0, 0.0]), np.array([0.0, 100.0]), method="rk4")


@pytest.mark.parametrize("call, words", [
    (lambda: dk.odeint(lambda y, t: -y, 1.0, np.array([0.0, 1.0]), adjoint="magic"),
     "adjoint must be one of"),
    (lambda: dk.odeint(lambda y, t: -y, 1.0, np.array([0.0, 1.0]), method="euler"),
     "method must be one of"),
    (lambda: dk.odeint(lambda y, t: -y, 1.0, np.array([1.0, 0.0])), "strictly increasing"),
    (lambda: dk.odeint(lambda y, t: dnp.stack([y, y]), 1.0, np.array([0.0, 1.0])),
     "dy/dt shaped like y"),
    (lambda: dk.odeint(lambda y, t: y * y, 1.0, np.array([0.0, 2.0])), "blows up"),
    (lambda: dk.grad(lambda k: dk.odeint(lambda y, t, k: -k * y, 1.0, np.array([0.0, 1.0]),
                                         k)[-1], backend="compiled")(1.0), "method='rk4'"),
])
def test_mistakes_are_one_clear_line(call, words: str) -> None:
    with pytest.raises(dk.DiffkitError, match=words) as err:
        call()
    assert "\n" not in str(err.value)


def test_continuous_adjoint_memory_is_flat_in_the_steps() -> None:
    t = np.array([0.0, 2.0])
    p = (1.5, 1.0, 3.0, 1.0)

    def peak(adjoint: str) -> int:
        loss = lambda a: dnp.sum(dk.odeint(lotka_volterra, np.array([1.0, 0.5]), t, a,  # noqa
                                           *p[1:], method="rk4", steps=200,
                                           adjoint=adjoint)[-1])
        tracemalloc.start()
        try:
            dk.grad(loss)(1.5)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak("continuous") < 0.2 * peak("discrete")
