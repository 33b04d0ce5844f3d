"""Taylor mode: dk.jet against jax.experimental.jet (and JAX's nested forward mode where
jet has no rule), dk.derivatives against a 40-digit mpmath reference."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench import catalog
from diffkit.bench.structured import taylor_chain
from diffkit.core import using
from diffkit.primitives import table

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
from jax.experimental import jet as jax_jet  # noqa: E402

ORDER = 6
SMOOTH = [e for e in catalog.ENTRIES  # (solvers decide on values: no Taylor series)
          if e.group not in ("non-smooth", "control flow", "iterative solvers")]


def _on_jax(f):
    def g(z):
        with using(jnp):
            return f(z)
    return g


def _nested_jax(g, x, v, order):
    """d^k/dt^k g(x + t v) at 0, k = 0..order, by JAX's forward mode nested k times."""
    h, out = (lambda t: g(x + t * v)), []
    for _ in range(order + 1):
        out.append(np.asarray(h(0.0)))
        h = jax.jacfwd(h)
    return out


def _close(mine, ref, rtol=1e-10):
    mine, ref = np.asarray(mine, float), np.asarray(ref, float)
    return np.allclose(mine, ref, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(ref)))))


def test_jet_agrees_with_jax_on_the_catalogs_smooth_functions():
    rng = np.random.default_rng(1)
    by_jet, by_nesting = [], []
    for entry in SMOOTH:
        f, x = entry.make()
        x = np.asarray(x, dtype=float)
        series = [0.3 * rng.standard_normal(x.shape) for _ in range(ORDER)]
        y0, ys = dk.jet(f, (x,), (series,))
        try:
            j0, js = jax_jet.jet(_on_jax(f), (jnp.asarray(x),), ([jnp.asarray(s) for s in series],))
        except KeyError:  # jax's jet has no rule (reduce_prod): a straight line, nested jvp
            line = [series[0]] + [np.zeros_like(x)] * (ORDER - 1)
            y0, ys = dk.jet(f, (x,), (line,))
            j0, *js = _nested_jax(_on_jax(f), jnp.asarray(x), jnp.asarray(series[0]), ORDER)
            by_nesting.append(entry.name)
        else:
            by_jet.append(entry.name)
        assert _close(y0, j0), entry.name
        for k, (mine, ref) in enumerate(zip(ys, js), 1):
            assert _close(mine, ref), f"{entry.name}: order {k}"
    assert len(by_jet) >= 25 and {"griewank", "speelpenning"} <= set(by_nesting)


UNARY_POINTS = {"log": 0.7, "log1p": 0.4, "sqrt": 0.8, "arcsin": 0.3, "arccos": 0.3,
                "arccosh": 1.6, "arctanh": 0.4, "logit": 0.3, "gammaln": 1.7, "cbrt": 0.6,
                "tan": 0.5, "sinc": 0.37}


@pytest.mark.parametrize("name", sorted(n for n, p in table().items()
                                        if p.broadcasts and len(p.jvp) == 1 and n not in
                                        ("real", "imag", "conj", "abs", "sign", "floor", "ceil",
                                         "rint", "polygamma", "sinc_derivative")))  # (orders: params)
def test_every_unary_primitive_against_jax_nested_forward(name):
    # to order 4: JAX's program doubles with each nesting, and the special functions' took
    # minutes at order 6 (the catalog's jet test and the 40-digit chain check order 6)
    prim = table()[name]
    x = UNARY_POINTS.get(name, 0.45)
    mine = dk.derivatives(prim, 4)(x)
    try:
        ref = _nested_jax(lambda t: prim.portable(jnp, t), jnp.asarray(x), jnp.asarray(1.0), 4)
    except (AttributeError, NotImplementedError, TypeError) as exc:
        pytest.skip(f"jax has no {name}: {exc}")
    for k, (a, b) in enumerate(zip(mine, ref)):
        assert _close(a, b, 1e-9), f"{name}: order {k}: {a} vs {b}"


def test_derivatives_of_a_200_primitive_chain_match_40_digits():
    x = 0.3
    with mpmath.workdps(40):
        ref = [mpmath.diff(lambda t: taylor_chain(t, m=mpmath), mpmath.mpf(x), k) for k in range(9)]
    mine = dk.derivatives(taylor_chain, 8)(x)
    for k, (a, b) in enumerate(zip(mine, ref)):
        assert abs(float(a) - float(b)) <= 1e-8 * abs(float(b)), f"order {k}: {a} vs {b}"


def test_derivatives_at_every_point_of_an_array():
    x = np.linspace(-1.0, 1.0, 5)
    d = dk.derivatives(lambda v: dnp.sin(2.0 * v), 4)(x)
    for k in range(5):
        assert np.allclose(d[k], 2.0 ** k * np.sin(2.0 * x + k * math.pi / 2), rtol=1e-13, atol=1e-13)


def test_jet_with_tuple_outputs_and_linear_structure():
    x = np.array([0.3, -0.2, 0.5, 0.9])
    a = np.arange(8.0).reshape(2, 4) / 7.0

    def f(v):
        w = dnp.concatenate([v[::-1], dnp.cumsum(v)])
        return a @ dnp.tanh(v), dnp.sum(dnp.reshape(w, (2, 4)) * dnp.exp(v), axis=0)

    series = [np.full(4, 0.5), np.array([1.0, 0.0, -1.0, 0.2]), np.zeros(4)]
    mine = dk.jet(f, (x,), (series,))
    ref = jax_jet.jet(_on_jax(f), (jnp.asarray(x),), ([jnp.asarray(s) for s in series],))
    for leaf_mine, leaf_ref in zip(mine[0], ref[0]):
        assert _close(leaf_mine, leaf_ref)
    for terms_mine, terms_ref in zip(mine[1], ref[1]):
        assert all(_close(u, v) for u, v in zip(terms_mine, terms_ref))


def test_mistakes_are_one_line():
    with pytest.raises(dk.DiffkitError, match="same number of terms"):
        dk.jet(lambda u, v: u * v, (1.0, 2.0), ([1.0], [1.0, 0.0]))
    with pytest.raises(dk.DiffkitError, match="tuples"):
        dk.jet(dnp.sin, 1.0, [1.0])
    with pytest.raises(dk.DiffkitError, match="R -> R"):
        dk.derivatives(lambda v: dnp.sum(v), 2)(np.ones(3))
    with pytest.raises(dk.DiffkitError, match="integer"):
        dk.derivatives(dnp.sin, -1)
    with pytest.raises(dk.DiffkitError, match="nest"):
        dk.grad(lambda v: dk.derivatives(dnp.sin, 2)(v)[2])(0.5)


def test_jet_of_two_primals_matches_jax():
    primals, series = (0.3, 0.7), ([1.0, 0.5, -0.2], [0.3, 0.0, 1.0])
    y0, ys = dk.jet(lambda a, b: dnp.sin(a) * dnp.exp(b) / (1.0 + a * b), primals, series)
    j0, js = jax_jet.jet(lambda a, b: jnp.sin(a) * jnp.exp(b) / (1.0 + a * b), primals, series)
    assert _close(y0, j0) and all(_close(u, v) for u, v in zip(ys, js))
