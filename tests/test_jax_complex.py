"""Differential test against JAX (x64) with complex numbers, rtol 1e-9.

* every primitive with a complex meaning (elementwise, reductions, products, linalg, fft),
  on complex inputs: the gradient of a real loss (JAX's convention: no conjugation),
  ``jvp`` with a complex tangent and ``vjp`` with a complex cotangent, by forward,
  reverse and compiled mode where they apply;
* ``holomorphic=True`` Jacobians (``jacfwd``, ``jacrev``) and gradients of holomorphic
  functions;
* second derivatives: Hessian-vector products of real losses of complex inputs
  (``jvp`` of ``grad``), holomorphic Hessians, and Hessians through container outputs
  (eigh, svd, qr, split, a dict-returning function).

One documented convention differs: ``eigh`` and ``cholesky`` read the lower triangle
(as numpy), JAX symmetrizes; the cases feed them Hermitian matrices built from the
input (``b + b^H``), where the two agree. Skipped, with the reason, without JAX.
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

RTOL = 1e-9


def _c(r: np.random.Generator, *shape: int, lo: float = -1.5, hi: float = 1.5,
       imag: float = 1.0) -> np.ndarray:
    return r.uniform(lo, hi, shape) + 1j * r.uniform(-imag, imag, shape)


def _right(r: np.random.Generator) -> np.ndarray:
    """Right half-plane (log, sqrt, power: away from their branch cut)."""
    return _c(r, 4, lo=0.4, hi=2.0)


def _inside(r: np.random.Generator) -> np.ndarray:
    """Small values (arcsin, arccos, arctanh, tan: away from cuts and poles)."""
    return _c(r, 4, lo=-0.6, hi=0.6, imag=0.4)


def _hermitian(xp: Any, b: Any) -> Any:
    return b + xp.conj(xp.swapaxes(b, -1, -2))


def _hpd(xp: Any, b: Any) -> Any:
    return b @ xp.conj(xp.swapaxes(b, -1, -2)) + 3.0 * xp.eye(b.shape[-1])


def _unit(xp: Any, x: Any) -> Any:
    return x + 0.0 * xp.sum(x)  # (a function of x, not x itself)


Fun = Callable[[Any, Any], Any]
Case = tuple[Fun, Callable[[np.random.Generator], np.ndarray], bool]  # (f(xp, z), z, holomorphic)
ELEMENTWISE = {  # name -> (f, domain); holomorphic unless listed in NOT_HOLOMORPHIC
    "exp": (lambda xp, z: xp.exp(z), lambda r: _c(r, 4)),
    "log": (lambda xp, z: xp.log(z), _right),
    "log1p": (lambda xp, z: xp.log1p(z), _right),
    "sqrt": (lambda xp, z: xp.sqrt(z), _right),
    "sin": (lambda xp, z: xp.sin(z), lambda r: _c(r, 4)),
    "cos": (lambda xp, z: xp.cos(z), lambda r: _c(r, 4)),
    "tan": (lambda xp, z: xp.tan(z), _inside),
    "arcsin": (lambda xp, z: xp.arcsin(z), _inside),
    "arccos": (lambda xp, z: xp.arccos(z), _inside),
    "arctan": (lambda xp, z: xp.arctan(z), _inside),
    "sinh": (lambda xp, z: xp.sinh(z), lambda r: _c(r, 4)),
    "cosh": (lambda xp, z: xp.cosh(z), lambda r: _c(r, 4)),
    "tanh": (lambda xp, z: xp.tanh(z), _inside),
    "arcsinh": (lambda xp, z: xp.arcsinh(z), _inside),
    "arccosh": (lambda xp, z: xp.arccosh(z), lambda r: _c(r, 4, lo=1.3, hi=2.5, imag=0.5)),
    "arctanh": (lambda xp, z: xp.arctanh(z), _inside),
    "expm1": (lambda xp, z: xp.expm1(z), lambda r: _c(r, 4)),
    "exp2": (lambda xp, z: xp.exp2(z), lambda r: _c(r, 4)),
    "power-const": (lambda xp, z: z ** 3 + z ** 0.5, _right),
    "power-complex": (lambda xp, z: z ** (z[::-1] * 0.5), _right),
    "div": (lambda xp, z: z[:2] / z[2:], _right),
    "mul-add-sub": (lambda xp, z: z * z[::-1] - (1.5 - 2j) * z + 1j, lambda r: _c(r, 4)),
    "reciprocal": (lambda xp, z: 1.0 / z, _right),
    "square": (lambda xp, z: xp.square(z), lambda r: _c(r, 4)),
    "real": (lambda xp, z: xp.real(z) * z, lambda r: _c(r, 4)),
    "imag": (lambda xp, z: xp.imag(z) * z, lambda r: _c(r, 4)),
    "conj": (lambda xp, z: xp.conj(z), lambda r: _c(r, 4)),
    "abs": (lambda xp, z: xp.abs(z), lambda r: _c(r, 4)),
    "angle": (lambda xp, z: xp.angle(z), _right),
    "sum-mean": (lambda xp, z: xp.sum(z) * z + xp.mean(z * z), lambda r: _c(r, 4)),
    "prod": (lambda xp, z: xp.prod(z) * z, lambda r: _c(r, 4)),
    "cumsum": (lambda xp, z: xp.cumsum(z * z), lambda r: _c(r, 4)),
    "cumprod": (lambda xp, z: xp.cumprod(z), lambda r: _c(r, 4)),
    "matmul": (lambda xp, z: xp.reshape(z, (2, 2)) @ xp.reshape(z[::-1], (2, 2)),
               lambda r: _c(r, 4)),
    "einsum": (lambda xp, z: xp.einsum("ij,jk->ik", xp.reshape(z, (2, 2)),
                                       xp.reshape(z * z, (2, 2))), lambda r: _c(r, 4)),
    "dot-outer": (lambda xp, z: xp.dot(z, z[::-1]) * xp.outer(z[:2], z[2:]),
                  lambda r: _c(r, 4)),
    "vdot": (lambda xp, z: xp.vdot(z, z * z), lambda r: _c(r, 4)),
    "inv": (lambda xp, z: xp.linalg.inv(xp.reshape(z, (2, 2)) + 2 * xp.eye(2)),
            lambda r: _c(r, 4)),
    "solve": (lambda xp, z: xp.linalg.solve(xp.reshape(z, (2, 2)) + 2 * xp.eye(2), z[:2] * z[2:]),
              lambda r: _c(r, 4)),
    "det": (lambda xp, z: xp.linalg.det(xp.reshape(z, (3, 3))), lambda r: _c(r, 9)),
    "slogdet": (lambda xp, z: xp.linalg.slogdet(xp.reshape(z, (3, 3)) + 2 * xp.eye(3))[1],
                lambda r: _c(r, 9)),
    "norm": (lambda xp, z: xp.linalg.norm(z) * xp.linalg.norm(xp.reshape(z, (2, 2)), "fro"),
             lambda r: _c(r, 4)),
    "eigh": (lambda xp, z: _eigh_seen(xp, _hermitian(xp, xp.reshape(z, (3, 3)))),
             lambda r: _c(r, 9)),
    "cholesky": (lambda xp, z: xp.linalg.cholesky(_hpd(xp, xp.reshape(z, (3, 3)))),
                 lambda r: _c(r, 9)),
    "svd": (lambda xp, z: _svd_seen(xp, xp.reshape(z, (3, 2))), lambda r: _c(r, 6)),
    "qr": (lambda xp, z: xp.concatenate([xp.ravel(m) for m in xp.linalg.qr(xp.reshape(z, (3, 2)))]),
           lambda r: _c(r, 6)),
    "fft": (lambda xp, z: xp.fft.fft(z * z), lambda r: _c(r, 5)),
    "ifft": (lambda xp, z: xp.fft.ifft(z) * z, lambda r: _c(r, 5)),
    "fft2": (lambda xp, z: xp.fft.fft2(xp.reshape(z, (2, 3))), lambda r: _c(r, 6)),
    "irfft": (lambda xp, z: xp.fft.irfft(z, n=6), lambda r: _c(r, 4)),
    "rfft-of-real": (lambda xp, z: xp.fft.rfft(xp.real(z) * xp.imag(z)), lambda r: _c(r, 6)),
}
NOT_HOLOMORPHIC = {"real", "imag", "conj", "abs", "angle", "norm", "eigh", "cholesky", "svd", "qr",
                   "slogdet", "irfft", "rfft-of-real", "vdot"}


def _eigh_seen(xp: Any, h: Any) -> Any:
    """Eigenvalues and |v_ij|^2 (free of the eigenvectors' phases)."""
    w, v = xp.linalg.eigh(h)
    return xp.concatenate([w, xp.ravel(xp.abs(v) ** 2)])


def _svd_seen(xp: Any, a: Any) -> Any:
    """Singular values and u_j v_j^H (free of the vectors' phases, which LAPACK and the
    derivative fix differently, in JAX as here)."""
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return xp.concatenate([s, xp.ravel((u * xp.arange(1.0, 3.0)) @ vh)])


def _loss(xp: Any, f: Fun) -> Callable[[Any], Any]:
    """A real loss of f's output: sum |f|^2 + Re sum(w f), w a fixed complex weight."""
    def loss(z: Any) -> Any:
        y = xp.ravel(f(xp, z))
        w = np.cos(np.arange(np.size(y) if not hasattr(y, "shape") else y.shape[0]) + 1.0) * (1 + 0.5j)
        return xp.sum(xp.real(y * xp.conj(y))) + xp.real(xp.sum(y * w))
    return loss


def _as(v: Any) -> np.ndarray:
    return np.asarray(v)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("backend", ["reverse", "forward", "compiled"])
def test_gradient_of_a_real_loss(name: str, backend: str) -> None:
    f, sample = ELEMENTWISE[name]
    z = sample(np.random.default_rng(len(name)))
    expected = _as(jax.grad(_loss(jnp, f))(jnp.asarray(z)))
    got = dk.grad(_loss(dnp, f), backend=backend)(z)
    assert np.iscomplexobj(got)
    assert_close(got, expected, rtol=RTOL)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_jvp_and_vjp_with_complex_tangents(name: str) -> None:
    f, sample = ELEMENTWISE[name]
    r = np.random.default_rng(len(name) + 1)
    z = sample(r)
    dz = _c(r, *z.shape)
    y, y_dot = jax.jvp(lambda v: f(jnp, v), (jnp.asarray(z),), (jnp.asarray(dz),))
    got_y, got_dot = dk.jvp(lambda v: f(dnp, v), (z,), (dz,))
    assert_close(got_y, _as(y), rtol=1e-12)
    assert_close(got_dot, _as(y_dot), rtol=RTOL)
    y, pull = jax.vjp(lambda v: f(jnp, v), jnp.asarray(z))
    u = _c(r, *np.shape(y)) if np.iscomplexobj(y) else r.uniform(-1, 1, np.shape(y))
    _, dk_pull = dk.vjp(lambda v: f(dnp, v), z)
    assert_close(dk_pull(u)[0], _as(pull(jnp.asarray(u))[0]), rtol=RTOL)


HOLOMORPHIC = sorted(set(ELEMENTWISE) - NOT_HOLOMORPHIC)


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic_jacobians(name: str) -> None:
    f, sample = ELEMENTWISE[name]
    z = sample(np.random.default_rng(len(name) + 2))
    expected = _as(jax.jacfwd(lambda v: f(jnp, v), holomorphic=True)(jnp.asarray(z)))
    assert_close(_as(jax.jacrev(lambda v: f(jnp, v), holomorphic=True)(jnp.asarray(z))), expected,
                 rtol=1e-12)
    for jac in (dk.jacfwd, dk.jacrev):
        assert_close(jac(lambda v: f(dnp, v), holomorphic=True)(z), expected, rtol=RTOL)
    assert_close(dk.jacobian(lambda v: f(dnp, v), holomorphic=True)(z), expected, rtol=RTOL)
    one = lambda xp: lambda v: xp.sum(f(xp, v))  # noqa: E731
    assert_close(dk.grad(one(dnp), holomorphic=True)(z),
                 _as(jax.grad(one(jnp), holomorphic=True)(jnp.asarray(z))), rtol=RTOL)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_second_derivatives_of_a_real_loss(name: str) -> None:
    """Hessian-vector products of a real loss of complex z: jvp of grad (JAX: the same)."""
    f, sample = ELEMENTWISE[name]
    r = np.random.default_rng(len(name) + 3)
    z = sample(r)
    dz = _c(r, *z.shape)
    expected = jax.jvp(jax.grad(_loss(jnp, f)), (jnp.asarray(z),), (jnp.asarray(dz),))[1]
    got = dk.jvp(dk.grad(_loss(dnp, f)), (z,), (dz,))[1]
    assert_close(got, _as(expected), rtol=1e-8)


@pytest.mark.parametrize("name", ["exp", "sin", "log", "power-complex", "prod", "inv", "det",
                                  "matmul", "fft"])
def test_holomorphic_hessian(name: str) -> None:
    f, sample = ELEMENTWISE[name]
    z = sample(np.random.default_rng(len(name) + 4))
    g = lambda xp: lambda v: xp.sum(xp.ravel(f(xp, v)) * xp.cos(xp.arange(np.size(f(np, z))) * 1.0))  # noqa: E731
    expected = _as(jax.hessian(g(jnp), holomorphic=True)(jnp.asarray(z)))
    assert_close(dk.hessian(g(dnp), holomorphic=True)(z), expected, rtol=RTOL)


# ------------------------------------------------------------ second derivatives through containers
CONTAINERS: dict[str, Fun] = {
    "eigh": lambda xp, x: xp.linalg.eigh(_hermitian(xp, xp.reshape(x[:9] + 1j * x[9:], (3, 3)))),
    "svd": lambda xp, x: dict(zip("usv", xp.linalg.svd(xp.reshape(x[:6] * (1 + 0.5j) + x[6:12] * 1j,
                                                                  (3, 2)), full_matrices=False))),
    "qr": lambda xp, x: xp.linalg.qr(xp.reshape(x[:6] + 1j * x[6:12], (3, 2))),
    "split": lambda xp, x: xp.split(xp.exp(x * (1 + 1j)), 3),
    "dict": lambda xp, x: {"spectrum": xp.fft.fft(x[:6] * (1 - 2j)), "energy": xp.sum(x ** 2),
                           "pair": (xp.sin(x[:2]), xp.abs(x[2:4] + 1j))},
}


def _tree_loss(xp: Any, f: Fun) -> Callable[[Any], Any]:
    """A real, phase-free loss of every leaf of f's container output."""
    def loss(x: Any) -> Any:
        leaves = jax.tree_util.tree_leaves(f(xp, x))
        return sum(xp.sum(xp.abs(leaf) ** 2 * (k + 1.0)) for k, leaf in enumerate(leaves))
    return loss


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_hessians_through_container_outputs(name: str) -> None:
    x = np.random.default_rng(len(name)).uniform(-1.0, 1.0, 18)
    expected = _as(jax.hessian(_tree_loss(jnp, CONTAINERS[name]))(jnp.asarray(x)))
    assert_close(dk.hessian(_tree_loss(dnp, CONTAINERS[name]))(x), expected, rtol=RTOL)
    inner = dk.jacrev(_tree_loss(dnp, CONTAINERS[name]))
    assert_close(dk.jacfwd(inner)(x), expected, rtol=RTOL)


@pytest.mark.parametrize("name", sorted(CONTAINERS))
def test_jacobians_of_container_outputs(name: str) -> None:
    """jacfwd of a container output of real inputs: complex blocks where leaves are complex."""
    x = np.random.default_rng(len(name) + 5).uniform(-1.0, 1.0, 18)
    expected = jax.tree_util.tree_leaves(jax.jacfwd(lambda v: CONTAINERS[name](jnp, v))(jnp.asarray(x)))
    got = jax.tree_util.tree_leaves(dk.jacfwd(lambda v: CONTAINERS[name](dnp, v))(x))
    assert len(got) == len(expected)
    if name in ("eigh", "svd"):  # (vectors: LAPACK's phases; compare the values only)
        got, expected = got[:1], expected[:1]
    for a, b in zip(got, expected):
        assert_close(a, _as(b), rtol=RTOL)
