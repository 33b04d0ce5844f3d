"""Shared helpers for the core test suite: finite differences, closeness, samplers.

Everything here is independent of diffkit's own derivative machinery: reference
derivatives come from central differences of plain numpy code, so a test never
compares diffkit against itself alone.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import importlib.util
import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import settings

from diffkit.core import new_level
from diffkit.interpreters.forward import Dual, ForwardInterpreter
from diffkit.interpreters.batching import Batched, BatchInterpreter, unbatch

# CI is deterministic: property tests replay the same examples on every run (derandomized);
# exploring fresh random programs is the soak's job (benchmarks/soak.py) or, locally,
# HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci" if os.environ.get("CI") == "true"
                      else os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Tables fit the terminal's width; pytest-xdist's workers set COLUMNS=80 of their own, so every
# test sees the width of no terminal (100) unless it sets COLUMNS itself.
os.environ["COLUMNS"] = "100"

# The compiled backend takes other paths with numba (fused kernels) than without: a module
# that exercises it is marked ``pytestmark = pytest.mark.fused`` (never skipped), and CI runs
# those again after installing the extras, with the tests of the extras and the slow ones.
FUSED = "fused"
# Minutes per test (the README's report commands, GradBench's nested descents on the eager
# backends): run on demand, ``python -m pytest -m soak``, not by CI (its 30 minutes).
SOAK = "soak"

# Optional extras: a test that needs one is marked with the extra's name (``@pytest.mark.jax``,
# or ``pytestmark = pytest.mark.jax`` for a module) and skipped without it, by one reason per
# extra; ``needs(extra)`` imports the package for a module or a test. ``-m slow`` selects the
# soak-scale and exhaustive runs that the default run leaves out (CI runs them after installing
# every extra: ``-m "slow or fused or jax or torch ..."``, printed by ``python tests/conftest.py``).
EXTRAS: dict[str, str] = {"jax": "jax", "torch": "torch", "autograd": "autograd",
                          "numdifftools": "numdifftools", "jit": "numba", "cluster": "distributed",
                          "notebook": "nbclient", "docs": "sphinx"}


def after_extras() -> str:
    """The marker expression of CI's second run, with every extra installed."""
    return f"({' or '.join(['slow', FUSED, *EXTRAS])}) and not {SOAK}"


def missing(extra: str) -> bool:
    """Whether the package of ``extra`` (a key of EXTRAS) is not installed."""
    return importlib.util.find_spec(EXTRAS[extra]) is None


def reason(extra: str) -> str:
    return f"needs {extra}: pip install '.[{extra}]'"


def needs(extra: str, module: str | None = None) -> Any:
    """``module`` (default: the extra's package) imported, or this test (module) skipped."""
    return pytest.importorskip(module or EXTRAS[extra], reason=reason(extra))


@pytest.fixture(scope="module")
def jax() -> Any:
    """JAX with float64 enabled (a peer's reference at diffkit's precision), or the test
    skipped: needs jax."""
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def pytest_configure(config: Any) -> None:
    for extra in EXTRAS:
        config.addinivalue_line("markers", f"{extra}: {reason(extra)} (skipped without it)")
    config.addinivalue_line("markers", "slow: soak-scale and exhaustive runs, left out of the "
                            "default run (pytest -m slow runs them; CI does)")
    config.addinivalue_line("markers", f"{SOAK}: minutes per test, on demand (pytest -m soak); "
                            "neither the default run nor CI runs it")
    config.addinivalue_line("markers", f"{FUSED}: exercises the compiled backend, whose kernels "
                            "fuse when numba is installed (CI runs it again with every extra)")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    for item in items:
        for extra in EXTRAS:
            if item.get_closest_marker(extra) is not None and missing(extra):
                item.add_marker(pytest.mark.skip(reason=reason(extra)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line: how many tests were skipped, by reason (the README run has no peers)."""
    counts: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        text = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        counts[text.removeprefix("Skipped: ")] += 1
    if counts:
        terminalreporter.write_line("skipped by reason: " + "; ".join(
            f"{n} {why}" for why, n in counts.most_common()))


# ---------------------------------------------------------------- finite differences


def central_jvp(f: Callable[..., Any], args: Sequence[Any], tangents: Sequence[Any],
                h: float = 1e-3) -> np.ndarray:
    """Directional derivative of plain-numpy ``f(*args)`` along ``tangents``.

    Fourth-order central stencil (f(x-2h), f(x-h), f(x+h), f(x+2h)): truncation error
    O(h^4) ~ 1e-12 and round-off ~ eps/h ~ 1e-13 for h = 1e-3 on O(1) inputs.
    """
    args = [_inexact(a) for a in args]
    tangents = [_inexact(t) for t in tangents]

    def at(s: float) -> np.ndarray:
        return _inexact(f(*[a + s * t for a, t in zip(args, tangents)]))

    return (8.0 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12.0 * h)


def central_diff(f: Callable[[Any], Any], x: Any, h: float = 1e-5) -> np.ndarray:
    """Plain second-order central difference gradient/Jacobian of ``f`` at array ``x``.

    Returns shape ``f(x).shape + x.shape``.
    """
    x = np.asarray(x, dtype=float)
    y0 = np.asarray(f(x), dtype=float)
    jac = np.zeros(y0.shape + x.shape)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = h
        d = (np.asarray(f(x + e), dtype=float) - np.asarray(f(x - e), dtype=float)) / (2 * h)
        jac[(Ellipsis,) + i] = d
    return jac


def gradcheck(f: Callable[[Any], Any], x: Any, g: Any, rtol: float = 1e-6,
              h: float = 1e-5) -> None:
    """Assert that ``g`` is the gradient of scalar ``f`` at ``x`` (central differences)."""
    assert_close(g, central_diff(f, x, h), rtol=rtol)


# ---------------------------------------------------------------- closeness


def _inexact(a: Any) -> np.ndarray:
    """``a`` as a float array, or complex where it is complex (the FFTs' values)."""
    return np.asarray(a, dtype=complex if np.iscomplexobj(a) else float)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-6, atol: float | None = None,
                 ) -> None:
    """``|actual - expected| <= rtol * max(1, max|expected|)`` elementwise (or ``atol``).

    Shapes must agree exactly (no silent broadcasting of a wrong-shaped result).
    """
    actual = _inexact(actual)
    expected = _inexact(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    assert np.all(np.isfinite(actual)), f"non-finite result {actual}"
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    tol = rtol * scale if atol is None else atol
    err = float(np.max(np.abs(actual - expected))) if expected.size else 0.0
    assert err <= tol, f"max error {err:.3e} > tol {tol:.3e}\nactual={actual}\nexpected={expected}"


def assert_own_value_within(module: Any, name: str, xs: np.ndarray, bound: float,
                            judged_over: int) -> None:
    """diffkit's own ``module.name`` within ``bound`` ulps of the atlas's 50-digit reference
    wherever the result is a normal float (more than ``judged_over`` such points), and
    ``diffkit.scipy.special``'s primitive (what the rules and the atlas call) equal to it."""
    from diffkit.bench import atlas
    import diffkit.scipy.special as dsp

    got = getattr(module, name)(xs)
    err, judged = atlas.value_errors(name, xs, got)
    assert judged.size > judged_over, judged.size
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}: {err[worst]:.3f} ulps at x = {judged[worst]!r}"
    np.testing.assert_array_equal(getattr(dsp, name)(xs), got)


def inner(a: Any, b: Any) -> float:
    """Re sum(a b): the pairing under which a VJP is the transpose of its JVP (for complex
    values too: JAX's convention, no conjugation)."""
    return float(np.real(np.sum(_inexact(a) * _inexact(b))))


# ---------------------------------------------------------------- forward mode on several args


def forward_multi(fun: Callable[..., Any], args: Sequence[Any], tangents: Sequence[Any | None],
                  batch: tuple[int, ...] = ()) -> tuple[Any, Any]:
    """``(fun(*args), sum_i J_i t_i)`` with every argument its own dual number on ONE level.

    A tangent of None marks a constant argument. This is ``diffkit.interpreters.forward.push_forward``
    generalised to several inputs, so a primitive sees its arguments directly (no ravel /
    concatenate in between). With ``batch=(k,)`` each tangent has a leading axis k: a batch
    of k directions (diffkit.interpreters.batching), as forward-mode Jacobians use it.
    """
    if batch:
        with new_level(lambda level: BatchInterpreter(level, batch[0])) as directions:
            y, y_dot = forward_multi(fun, args, [None if t is None else Batched(directions, t)
                                                 for t in tangents])
            return y, unbatch(y_dot, directions)
    with new_level(ForwardInterpreter) as interp:
        boxed = [a if t is None else Dual(interp, a, t) for a, t in zip(args, tangents)]
        y = fun(*boxed)
        if isinstance(y, Dual) and y._interp is interp:
            return y.value, y.tangent
        return y, np.zeros(np.shape(y))


# ---------------------------------------------------------------- samplers


def real(rng: np.random.Generator, shape: tuple[int, ...] = (), lo: float = -2.0,
         hi: float = 2.0) -> Any:
    v = rng.uniform(lo, hi, size=shape)
    return np.float64(v) if shape == () else v


def positive(rng: np.random.Generator, shape: tuple[int, ...] = ()) -> Any:
    return real(rng, shape, 0.5, 2.0)


def away(rng: np.random.Generator, shape: tuple[int, ...] = (), lo: float = 0.3,
         hi: float = 2.0) -> Any:
    """Random sign times a magnitude in [lo, hi]: never near zero (kinks, poles)."""
    v = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(lo, hi, size=shape)
    return np.float64(v) if shape == () else v


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    """Entries at least 0.25 apart (no ties anywhere: max/min are smooth there)."""
    n = int(np.prod(shape))
    v = rng.permutation(n) * 0.3 - 0.15 * n + rng.uniform(-0.02, 0.02, size=n)
    return np.float64(v[0]) if shape == () else v.reshape(shape)


__all__ = ["EXTRAS", "assert_close", "needs", "away", "central_diff", "central_jvp", "distinct",
           "forward_multi", "gradcheck", "inner", "positive", "real"]


if __name__ == "__main__":
    print(after_extras())
