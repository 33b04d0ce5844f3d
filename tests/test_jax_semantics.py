"""Differential test against JAX: every function of the numpy coverage (tests/jax_cases.py),
forward- and reverse-mode Jacobians against ``jax.jacfwd`` / ``jax.jacrev`` at random points
of its domain, in double precision, rtol 1e-9. Skipped, with the reason, without JAX."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import needs, assert_close
from jax_cases import CASES

import diffkit as dk
import diffkit.numpy as dnp
import diffkit.scipy.special as dsp

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
jnp = needs("jax", "jax.numpy")
jsp = needs("jax", "jax.scipy.special")


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_jacobians_agree_with_jax(name: str, seed: int) -> None:
    fn, sample = CASES[name]
    x = sample(np.random.default_rng(seed))
    expected = np.asarray(jax.jacfwd(lambda v: fn(jnp, jsp, v))(jnp.asarray(x)))
    assert_close(np.asarray(jax.jacrev(lambda v: fn(jnp, jsp, v))(jnp.asarray(x))), expected,
                 rtol=1e-12)  # (JAX agrees with itself)
    value = fn(dnp, dsp, x)
    assert_close(value, np.asarray(fn(jnp, jsp, jnp.asarray(x))), rtol=1e-12)
    for backend in ("forward", "reverse"):
        got = dk.jacobian(lambda v: fn(dnp, dsp, v), backend=backend)(x)
        assert np.shape(got) == expected.shape, backend
        assert_close(got, expected, rtol=1e-9)
