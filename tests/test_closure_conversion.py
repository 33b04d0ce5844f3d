"""Closure conversion: a compiled transform of a function that closes over values of an
outer transform takes them as inputs of its graph (as JAX does), so the outer transform
differentiates, batches or records through the inner program. Every value is checked
against its closed form."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close

import diffkit as dk
import diffkit.numpy as dnp

OUTER = ["reverse", "forward", "compiled"]


@pytest.mark.parametrize("outer", OUTER)
def test_the_issues_example_under_every_outer_backend(outer):
    """d/dx of (d/dy x y²)(y = 2) = d/dx 4x = 4."""
    def f(x):
        return dk.grad(lambda y: x * y * y, backend="compiled")(2.0)

    assert dk.grad(f, backend=outer)(3.0) == pytest.approx(4.0, rel=1e-15)
    assert f(3.0) == pytest.approx(12.0, rel=1e-15)


@pytest.mark.parametrize("outer", OUTER)
def test_every_inner_transform_closes_over_outer_arrays(outer):
    """Inner value_and_grad, jacobian, hessian, jvp and vjp of sin(a y) · y with a closed
    over; the outer gradient of their sum in a against the closed form."""
    y0 = np.array([0.3, -0.7])

    def inner(a):
        return lambda y: dnp.sum(dnp.sin(a * y) * y)

    def f(a):
        h = inner(a)
        value, g = dk.value_and_grad(h, backend="compiled")(y0)
        J = dk.jacobian(lambda y: dnp.sin(a * y), backend="compiled")(y0)
        H = dk.hessian(h, backend="compiled")(y0)
        _, t = dk.jvp(lambda y: dnp.sin(a * y), (y0,), (np.ones(2),), backend="compiled")
        _, pull = dk.vjp(lambda y: dnp.sin(a * y), y0, backend="compiled")
        return value + dnp.sum(g) + dnp.sum(J) + dnp.sum(H) + dnp.sum(t) + dnp.sum(pull(np.ones(2))[0])

    def closed(a):  # the same sum by hand, and its derivative in a (per element of a)
        s, c = np.sin(a * y0), np.cos(a * y0)
        value = np.sum(s * y0)
        g = a * c * y0 + s
        H = 2 * a * c - a * a * s * y0
        J = a * c
        return value + g.sum() + J.sum() + H.sum() + J.sum() + J.sum()

    a = np.array([1.1, 0.4])
    assert_close(f(a), closed(a), 1e-13)
    h = 1e-6
    numeric = np.array([(closed(a + h * e) - closed(a - h * e)) / (2 * h) for e in np.eye(2)])
    assert_close(dk.grad(f, backend=outer)(a), numeric, 1e-7)


def test_a_jitted_outer_function_compiles_one_program_through_the_inner_closure():
    """dk.jit of a function holding dk.grad(..., backend="compiled") of a closure: one
    outer program (a cache hit on the second call), the inner graph recorded into it."""
    @dk.jit
    def f(x):
        return dk.grad(lambda y: dnp.sum(dnp.exp(x * y)), backend="compiled")(np.ones(3))

    x = np.array([0.5, -1.0, 2.0])
    assert_close(f(x), x * np.exp(x), 1e-15)
    assert_close(f(2.0 * x), 2.0 * x * np.exp(2.0 * x), 1e-15)
    assert f.cache_info().misses == 1 and f.cache_info().hits == 1


def test_vmap_over_a_closure_and_a_second_derivative():
    """vmap of the inner compiled gradient's closure over a batch of x; the outer hessian
    of x -> grad_y(x y³)(1.5) = 3 x · 2.25 is 0, its gradient 6.75."""
    xs = np.array([1.0, 2.0, -0.5])
    got = dk.vmap(lambda x: dk.grad(lambda y: x * y ** 3, backend="compiled")(1.5))(xs)
    assert_close(got, 6.75 * xs, 1e-15)
    f = lambda x: dk.grad(lambda y: x * x * y ** 3, backend="compiled")(1.5)  # 6.75 x²
    assert dk.grad(dk.grad(f))(0.8) == pytest.approx(13.5, rel=1e-14)


def test_a_value_of_an_ended_transform_is_one_clear_line():
    kept = []
    dk.grad(lambda x: kept.append(x) or x * 1.0)(3.0)
    with pytest.raises(dk.DiffkitError, match="escaped its transform"):
        dk.jit(lambda y: kept[0] * y)(2.0)
    with pytest.raises(dk.DiffkitError, match="transform that has ended"):  # under another
        dk.grad(lambda x: dk.jit(lambda y: kept[0] * y * x)(2.0))(1.0)
