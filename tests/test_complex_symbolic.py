"""The symbolic and numeric backends at complex points, against closed forms and JAX (x64).

A complex point ``z = x + iy`` is traced as the real symbols of its parts; SymPy's partial
derivatives along ``x`` and ``y`` are combined as JAX does (``df/dx - i df/dy`` for a real
f, ``f'(z)`` for a holomorphic one, the transpose of the real-linear JVP for ``vjp``).
Central differences take the same two directions. Where SymPy cannot
decide (``sign`` of a complex value, a comparison of complex values) the answer is
NotApplicable, one line.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk
import diffkit.numpy as dnp

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jnp = needs("jax", "jax.numpy")

Z = np.array([1.0 + 2.0j, 0.5 - 1.0j, -0.3 + 0.2j])
TOL = {"symbolic": 1e-11, "numeric": 1e-6}

# real-valued f of complex z, written once for diffkit.numpy and jax.numpy
REAL: dict[str, Callable[[Any, Any], Any]] = {
    "abs(sin z)^2": lambda xp, z: xp.sum(xp.abs(xp.sin(z)) ** 2),
    "re(z conj z) + im(z^3)": lambda xp, z: xp.sum(xp.real(z * xp.conj(z)) + xp.imag(z ** 3)),
    "angle": lambda xp, z: xp.sum(xp.angle(z) * xp.real(z)),
    "log abs exp": lambda xp, z: xp.sum(xp.log(xp.abs(xp.exp(z) + 2.0))),
    "|z|": lambda xp, z: xp.sum(xp.abs(z) * xp.imag(xp.sqrt(z))),
    "matmul": lambda xp, z: xp.real(xp.sum(xp.outer(z, xp.conj(z)) @ z)),
    "where |z|>1": lambda xp, z: xp.sum(xp.where(xp.abs(z) > 1.0, xp.real(z) ** 2, xp.imag(z))),
}
# holomorphic f: complex in, complex out
HOLO: dict[str, Callable[[Any, Any], Any]] = {
    "z^3 sin z": lambda xp, z: xp.sum(z ** 3 * xp.sin(z)),
    "exp/(1+z^2)": lambda xp, z: xp.sum(xp.exp(z) / (1.0 + z ** 2)),
    "log cosh": lambda xp, z: xp.sum(xp.log(xp.cosh(z)) * z[0]),
}


@pytest.mark.parametrize("backend", ["symbolic", "numeric"])
@pytest.mark.parametrize("name", sorted(REAL))
def test_gradient_of_a_real_function_matches_jax(backend: str, name: str) -> None:
    f = REAL[name]
    expected = np.asarray(jax.grad(lambda z: f(jnp, z))(jnp.asarray(Z)))
    assert_close(dk.grad(lambda z: f(dnp, z), backend=backend)(Z), expected, rtol=TOL[backend])


@pytest.mark.parametrize("backend", ["symbolic", "numeric"])
@pytest.mark.parametrize("name", sorted(HOLO))
def test_holomorphic_gradient_matches_jax(backend: str, name: str) -> None:
    f = HOLO[name]
    expected = np.asarray(jax.grad(lambda z: f(jnp, z), holomorphic=True)(jnp.asarray(Z)))
    got = dk.grad(lambda z: f(dnp, z), backend=backend, holomorphic=True)(Z)
    assert_close(got, expected, rtol=TOL[backend])


@pytest.mark.parametrize("backend", ["symbolic", "numeric"])
def test_closed_forms(backend: str) -> None:
    """|z|^2 has gradient 2 conj(z); z^3 has f'(z) = 3z^2; exp has Jacobian diag(exp z)."""
    rtol = TOL[backend]
    assert_close(dk.grad(lambda z: dnp.abs(z) ** 2, backend=backend)(3.0 + 4.0j), 6.0 - 8.0j,
                 rtol=rtol)
    assert_close(dk.grad(lambda z: z ** 3, backend=backend, holomorphic=True)(Z[0]),
                 3 * Z[0] ** 2, rtol=rtol)
    assert_close(dk.jacobian(dnp.exp, backend=backend, holomorphic=True)(Z),
                 np.diag(np.exp(Z)), rtol=rtol, atol=1e-9 if backend == "numeric" else 0)
    if backend == "symbolic":
        assert_close(dk.derivative(dnp.sin, backend=backend)(Z), np.cos(Z), rtol=rtol)


@pytest.mark.parametrize("backend", ["symbolic", "numeric"])
def test_jvp_and_vjp_with_complex_tangents_match_jax(backend: str) -> None:
    """A function neither real nor holomorphic: only the real-linear JVP and its transpose
    (for Re sum(u v), no conjugation) describe it."""
    def f(xp, z):
        return xp.exp(z) * xp.conj(z) + xp.abs(z)

    z_dot = np.array([0.3 - 0.1j, 0.2 + 0.5j, -1.0j])
    u = np.array([1j, 2.0 + 0.0j, 0.5 - 0.5j])
    y_dot = jax.jvp(lambda z: f(jnp, z), (jnp.asarray(Z),), (jnp.asarray(z_dot),))[1]
    z_bar = jax.vjp(lambda z: f(jnp, z), jnp.asarray(Z))[1](jnp.asarray(u))[0]
    be = dk.backend(backend)
    assert_close(be.jvp(lambda z: f(dnp, z), Z, z_dot)[1], np.asarray(y_dot), rtol=TOL[backend])
    (got,) = dk.vjp(lambda z: f(dnp, z), Z, backend=backend)[1](u)
    assert_close(got, np.asarray(z_bar), rtol=TOL[backend])


@pytest.mark.parametrize("fun, words", [
    (lambda z: dnp.abs(dnp.sum(dnp.sign(z))), "SymPy cannot differentiate sign"),
    (lambda z: dnp.sum(dnp.real(dnp.maximum(z, 0.5))), "cannot compare complex values"),
    (lambda z: dnp.sum(dnp.where(z > 0.5, dnp.abs(z), 0.0)), "cannot compare complex values"),
])
def test_symbolic_says_not_applicable_where_sympy_cannot_decide(fun: Callable,
                                                                words: str) -> None:
    with pytest.raises(dk.NotApplicable, match=words) as info:
        dk.grad(fun, backend="symbolic")(Z)
    assert "\n" not in str(info.value)


def test_holomorphic_hessian_matches_jax() -> None:
    """f'' of a holomorphic f is d2f/dx2: SymPy's (or central differences') second
    derivatives of Re f and Im f along the real parts."""
    f = HOLO["z^3 sin z"]
    expected = np.asarray(jax.hessian(lambda z: f(jnp, z), holomorphic=True)(jnp.asarray(Z)))
    got = dk.hessian(lambda z: f(dnp, z), backend="symbolic", holomorphic=True)(Z)
    assert_close(got, expected, rtol=1e-12)
    g = HOLO["log cosh"]                                       # entries off the diagonal too
    expected = np.asarray(jax.hessian(lambda z: g(jnp, z), holomorphic=True)(jnp.asarray(Z)))
    assert_close(dk.hessian(lambda z: g(dnp, z), backend="symbolic", holomorphic=True)(Z),
                 expected, rtol=1e-12)
    assert_close(dk.hessian(lambda z: g(dnp, z), backend="numeric", holomorphic=True)(Z),
                 expected, rtol=1e-5)


def test_symbolic_real_points_are_unchanged() -> None:
    """The real closed form still has no I and gives the real derivative."""
    d = dk.closed_form(lambda x: dnp.abs(dnp.log1p(x)) * x, 0.0, kind="derivative")
    assert "I" not in str(d.expression)
    x = np.array([-0.5, 2.0])
    expected = np.sign(np.log1p(x)) * (np.log1p(x) + x / (1 + x))
    assert_close(dk.derivative(lambda x: dnp.abs(dnp.log1p(x)) * x, backend="symbolic")(x),
                 expected, rtol=1e-12)
