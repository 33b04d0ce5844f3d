"""Convolution and correlation: ``dnp.convolve``/``dnp.correlate`` against numpy and
``diffkit.scipy.signal`` against SciPy (values, every mode and size order, real and
complex), gradients in both inputs against JAX (x64) by forward, reverse and compiled
mode, a Hessian against JAX's, vmap against a loop, and the errors."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk
import diffkit.numpy as dnp

import scipy.signal as ss  # noqa: E402

import diffkit.scipy.signal as dss  # noqa: E402

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jnp = needs("jax", "jax.numpy")
jss = needs("jax", "jax.scipy.signal")

MODES = ["full", "same", "valid"]
SIZES_1D = [(5, 3), (3, 5), (4, 4), (6, 1), (1, 4), (7, 4), (4, 7)]
SIZES_ND = [((4, 5), (2, 3)), ((2, 3), (4, 5)), ((4, 4, 3), (2, 3, 3)), ((3, 4), (3, 4)),
            ((5, 2), (2, 2)), ((2, 6), (3, 1))]


def _pair(r: np.random.Generator, sa: Any, sv: Any, complex_: bool = False) -> tuple[Any, Any]:
    a, v = r.standard_normal(sa), r.standard_normal(sv)
    if complex_:
        a, v = a + 1j * r.standard_normal(sa), v + 1j * r.standard_normal(sv)
    return a, v


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("complex_", [False, True])
def test_numpy_values(name: str, mode: str, complex_: bool) -> None:
    r = np.random.default_rng(0)
    for n, m in SIZES_1D:
        a, v = _pair(r, n, m, complex_)
        assert_close(getattr(dnp, name)(a, v, mode), getattr(np, name)(a, v, mode), rtol=1e-12)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("complex_", [False, True])
def test_scipy_values(name: str, mode: str, complex_: bool) -> None:
    r = np.random.default_rng(1)
    for n, m in SIZES_ND + [((5,), (3,)), ((3,), (5,))]:
        a, v = _pair(r, n, m, complex_)
        try:
            want = getattr(ss, name)(a, v, mode)
        except ValueError:  # valid mode with neither input covering the other
            with pytest.raises(dk.DiffkitError, match="at least as large"):
                getattr(dss, name)(a, v, mode)
            continue
        assert_close(getattr(dss, name)(a, v, mode), want, rtol=1e-12)


def _weights(r: np.random.Generator, out_shape: tuple[int, ...]) -> np.ndarray:
    return r.standard_normal(out_shape)


@pytest.mark.parametrize("lib", ["numpy", "signal"])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_gradients_in_both_inputs_match_jax(lib: str, name: str, mode: str) -> None:
    r = np.random.default_rng(2)
    ours = getattr(dnp if lib == "numpy" else dss, name)
    theirs = getattr(jnp if lib == "numpy" else jss, name)
    # (JAX refuses inputs of which neither covers the other, in every mode; SciPy in 'valid')
    sizes = SIZES_1D if lib == "numpy" else [s for s in SIZES_ND if s != ((2, 6), (3, 1))]
    for n, m in sizes:
        a, v = _pair(r, n, m)
        w = _weights(r, np.shape(getattr(np if lib == "numpy" else ss, name)(a, v, mode)))
        want = jax.grad(lambda x, y: jnp.sum(theirs(x, y, mode) * w), argnums=(0, 1))(a, v)
        for backend in ("forward", "reverse", "compiled"):
            got = dk.grad(lambda x, y: dnp.sum(ours(x, y, mode) * w), argnums=(0, 1),
                          backend=backend)(a, v)
            for g, e in zip(got, want):
                assert_close(g, np.asarray(e), rtol=1e-9)


def test_hessian_matches_jax() -> None:
    r = np.random.default_rng(3)
    x = r.standard_normal(7)

    def f(lib_np: Any, sig: Any, x: Any) -> Any:
        a, v = x[:4], x[4:]
        return lib_np.sum(sig.convolve(a, v, "full") ** 2) + lib_np.sum(lib_np.correlate(a * a, v, "same"))

    want = jax.hessian(lambda x: f(jnp, jss, x))(x)
    assert_close(dk.hessian(lambda x: f(dnp, dss, x))(x), np.asarray(want), rtol=1e-9)


def test_vmap_equals_a_loop() -> None:
    r = np.random.default_rng(4)
    images, kernel = r.standard_normal((3, 5, 4)), r.standard_normal((2, 2))
    got = dk.vmap(lambda im: dss.correlate(im, kernel, "valid"))(images)
    assert_close(got, np.stack([ss.correlate(im, kernel, "valid") for im in images]), rtol=1e-12)


def test_errors_name_what_was_wrong() -> None:
    with pytest.raises(dk.DiffkitError, match="mode must be one of"):
        dnp.convolve(np.ones(3), np.ones(2), "middle")
    with pytest.raises(dk.DiffkitError, match="1-d arrays"):
        dnp.convolve(np.ones((3, 2)), np.ones(2))
    with pytest.raises(dk.DiffkitError, match="same number of axes"):
        dss.convolve(np.ones((3, 2)), np.ones(2))
