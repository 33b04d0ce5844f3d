"""The differential run against JAX (x64): every function that the coverage page lists as
differentiable in diffkit and that ``jax.numpy`` / ``jax.numpy.linalg`` / ``jax.numpy.fft`` /
``jax.scipy.special`` / ``jax.scipy.linalg`` / ``jax.scipy.stats`` also provide, compared
at deterministic random points: values (rtol 1e-9) and Jacobians by diffkit's forward and
reverse modes against ``jax.jacrev`` (``jacfwd`` where JAX has no reverse mode), rtol 1e-9. The cases are in
tests/jax_differential_cases.py; a shared function without a case fails
``test_every_shared_function_has_a_case`` (or is listed, with its reason, in NOT_COMPARED).
"""
from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import needs, assert_close
from jax_differential_cases import CASES, NOT_COMPARED, VALUES_ONLY

import diffkit as dk
from diffkit.core import NotApplicable

pytestmark = pytest.mark.jax
jax = needs("jax")
jax.config.update("jax_enable_x64", True)
from diffkit.nplib import coverage  # noqa: E402

JAX_MODULES = {"numpy": "jax.numpy", "numpy.linalg": "jax.numpy.linalg", "numpy.fft": "jax.numpy.fft",
               "scipy.special": "jax.scipy.special", "scipy.linalg": "jax.scipy.linalg",
               "scipy.stats": "jax.scipy.stats"}


def _namespaces(jax_side: bool) -> SimpleNamespace:
    names = {"np": "numpy", "linalg": "numpy.linalg", "fft": "numpy.fft", "special": "scipy.special",
             "slinalg": "scipy.linalg", "stats": "scipy.stats"}
    source = JAX_MODULES if jax_side else coverage.OURS
    return SimpleNamespace(**{k: importlib.import_module(source[v]) for k, v in names.items()})


def shared() -> list[str]:
    """Qualified names differentiable in diffkit and present in JAX."""
    out = []
    for namespace, by_status in coverage.table().items():
        theirs = importlib.import_module(JAX_MODULES[namespace])
        out += [f"{namespace}.{n}" for n in by_status.get("differentiable", []) if hasattr(theirs, n)]
    return sorted(out)


SHARED = shared()
PARAMS = [pytest.param(name, k, id=f"{name}-{k}") for name in SHARED if name in CASES
          for k in range(len(CASES[name]))]


def test_every_shared_function_has_a_case() -> None:
    missing = [n for n in SHARED if n not in CASES and n not in NOT_COMPARED]
    assert not missing, f"shared with JAX but no case in jax_differential_cases.py: {missing}"
    assert len(SHARED) >= 280, len(SHARED)  # (the run's size: see the coverage page)


@pytest.mark.parametrize("name,k", PARAMS)
def test_values_and_jacobians_agree_with_jax(name: str, k: int) -> None:
    fn, sample = CASES[name][k]
    ours, theirs = _namespaces(False), _namespaces(True)
    x = sample(np.random.default_rng(k))
    expected = np.asarray(fn(theirs, jax.numpy.asarray(x)))
    assert_close(np.asarray(fn(ours, x), dtype=float), expected, rtol=1e-9)
    if name in VALUES_ONLY:
        return
    try:
        jac = np.asarray(jax.jacrev(lambda v: fn(theirs, v))(jax.numpy.asarray(x)))
    except ValueError:  # (JAX's polar iterates in a while_loop: forward mode only)
        jac = np.asarray(jax.jacfwd(lambda v: fn(theirs, v))(jax.numpy.asarray(x)))
    for backend in ("forward", "reverse"):
        got = dk.jacobian(lambda v: fn(ours, v), backend=backend)(x)
        assert np.shape(got) == jac.shape, backend
        assert_close(got, jac, rtol=1e-9)


def test_compiled_backend_agrees_or_says_not_applicable() -> None:
    """Every case on the compiled backend (one graph traced for all values): the reverse
    Jacobian, or NotApplicable where the function reads values (sorts, NaN masks, ranks)."""
    ours = _namespaces(False)
    agree, refused = 0, []
    for name, k in (p.values for p in PARAMS):
        if name in VALUES_ONLY:
            continue
        fn, sample = CASES[name][k]
        x = sample(np.random.default_rng(k))
        expected = dk.jacobian(lambda v: fn(ours, v), backend="reverse")(x)
        try:
            got = dk.jacobian(lambda v: fn(ours, v), backend="compiled")(x)
        except NotApplicable:
            refused.append(name)
            continue
        assert_close(got, expected, rtol=1e-9)
        agree += 1
    assert agree >= 280 and len(refused) <= 60, (agree, sorted(set(refused)))
