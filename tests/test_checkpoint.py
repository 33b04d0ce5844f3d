"""Checkpointing: the same gradients as the plain tape (closed forms, JAX), the body really
recomputed, parameters read from outside (PyTorch style) included, and the binomial
schedule's recomputation count equal to the optimum found by brute force."""
from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.transforms.checkpoint import schedule

calls = {"f": 0, "step": 0}


def f(x):
    calls["f"] += 1
    return dnp.sin(x) * x


def df(x):
    return np.cos(x) * x + np.sin(x)


X = np.array([0.3, -1.2, 2.0])


def test_checkpoint_recomputes_and_gives_the_closed_form() -> None:
    calls["f"] = 0
    g = dk.grad(lambda x: dnp.sum(dk.checkpoint(f)(x) ** 2))(X)
    np.testing.assert_allclose(g, 2.0 * np.sin(X) * X * df(X), rtol=1e-14)
    assert calls["f"] == 2  # once forward (nothing kept), once in the backward sweep


def test_nested_checkpoints_and_second_derivatives() -> None:
    inner = dk.checkpoint(f)
    outer = dk.checkpoint(lambda x: inner(x) * x)
    g = dk.grad(lambda x: dnp.sum(outer(x)))(X)
    np.testing.assert_allclose(g, df(X) * X + np.sin(X) * X, rtol=1e-14)
    h = dk.hessian(lambda x: dk.checkpoint(f)(x))(0.7)
    np.testing.assert_allclose(h, -np.sin(0.7) * 0.7 + 2 * np.cos(0.7), rtol=1e-14)
    hr = dk.hessian(lambda x: dk.checkpoint(f)(x), backend="reverse")(0.7)
    np.testing.assert_allclose(hr, h, rtol=1e-14)


def test_checkpoint_with_vmap_both_ways() -> None:
    per = dk.vmap(dk.grad(dk.checkpoint(f)))(X)
    np.testing.assert_allclose(per, df(X), rtol=1e-14)
    g = dk.grad(lambda x: dnp.sum(dk.vmap(dk.checkpoint(f))(x)))(X)
    np.testing.assert_allclose(g, df(X), rtol=1e-14)


def test_pytorch_style_checkpoint_inside_a_module_forward() -> None:
    from diffkit import nn

    class Block(nn.Module):
        def __init__(self, rng: np.random.Generator, remat: bool) -> None:
            super().__init__()
            self.lin1, self.lin2 = nn.Linear(3, 5, rng=rng), nn.Linear(5, 3, rng=rng)
            self.remat = remat

        def body(self, h):
            return dnp.tanh(self.lin2(dnp.tanh(self.lin1(h))))

        def forward(self, h):
            return dk.checkpoint(self.body)(h) if self.remat else self.body(h)

    grads = []
    for remat in (False, True):
        rng = np.random.default_rng(3)
        first, block = nn.Linear(2, 3, rng=rng), Block(rng, remat)
        x = rng.normal(size=(4, 2))
        dnp.sum(block(first(x)) ** 2).backward()
        grads.append([p.grad for p in list(first.parameters()) + list(block.parameters())])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-14, atol=1e-16)


def step(x):
    calls["step"] += 1
    return x + 0.1 * dnp.sin(x) * dnp.cos(2.0 * x)


def looped(x, n):
    for _ in range(n):
        x = step(x)
    return x


def by_hand(x, n):
    """y = step applied n times, y' and y'' (step acts elementwise), in plain numpy: the
    chain rule y'_{k+1} = s'(y_k) y'_k, y''_{k+1} = s''(y_k) y'_k^2 + s'(y_k) y''_k with
    s(x) = x + 0.1 sin x cos 2x written out by hand."""
    y, d1, d2 = np.array(x, dtype=float), np.ones_like(x), np.zeros_like(x)
    for _ in range(n):
        s1 = 1.0 + 0.1 * (np.cos(y) * np.cos(2 * y) - 2.0 * np.sin(y) * np.sin(2 * y))
        s2 = 0.1 * (-5.0 * np.sin(y) * np.cos(2 * y) - 4.0 * np.cos(y) * np.sin(2 * y))
        y, d1, d2 = y + 0.1 * np.sin(y) * np.cos(2 * y), s1 * d1, s2 * d1 ** 2 + s1 * d2
    return y, d1, d2


@lru_cache(maxsize=None)
def fewest(steps: int, snaps: int) -> int:
    """Brute force: the fewest step evaluations that reverse ``steps`` steps from one stored
    state with ``snaps`` stored states in all (taped steps not counted)."""
    if steps == 1:
        return 0
    if snaps == 1:
        return steps * (steps - 1) // 2
    return min(m + fewest(m, snaps) + fewest(steps - m, snaps - 1) for m in range(1, steps))


@pytest.mark.parametrize("n, k", [(1, 1), (2, 1), (9, 1), (10, 3), (30, 2), (40, 4), (45, 5),
                                  (20, 30)])
def test_revolve_gradient_and_optimal_recomputation(n: int, k: int) -> None:
    calls["step"] = 0
    g = dk.grad(lambda x: dnp.sum(dk.checkpoint_loop(step, x, n, snapshots=k)))(X)
    used = calls["step"]
    calls["step"] = 0
    np.testing.assert_allclose(g, by_hand(X, n)[1], rtol=1e-13)
    assert used == fewest(n, min(k, n)) + n  # + each step taped once
    t = schedule(n, k)[0]
    if n > 1:  # Griewank's closed form of the minimum
        assert used - n == t * n - comb(k + t, t - 1)


def test_checkpoint_loop_second_derivatives_and_vmap() -> None:
    v = np.array([1.0, 0.5, -0.25])
    a = dk.hvp(lambda x: dnp.sum(dk.checkpoint_loop(step, x, 12, snapshots=3) ** 2))(X, v)
    y, d1, d2 = by_hand(X, 12)  # the Hessian of sum(y^2) is diagonal: 2 y'^2 + 2 y y''
    np.testing.assert_allclose(a, (2.0 * d1 ** 2 + 2.0 * y * d2) * v, rtol=1e-12)
    per = dk.vmap(dk.grad(lambda x: dk.checkpoint_loop(step, x, 7, snapshots=2)))(X)
    ref = by_hand(X, 7)[1]
    np.testing.assert_allclose(per, ref, rtol=1e-13)
    g = dk.grad(lambda x: dnp.sum(dk.vmap(lambda y: dk.checkpoint_loop(step, y, 7, 2))(x)))(X)
    np.testing.assert_allclose(g, ref, rtol=1e-13)


def test_checkpoint_loop_mistakes_are_one_line() -> None:
    with pytest.raises(dk.DiffkitError, match="snapshots must be an int >= 1"):
        dk.checkpoint_loop(step, X, 5, snapshots=0)
    with pytest.raises(dk.DiffkitError, match="n must be a number of steps"):
        dk.checkpoint_loop(step, X, -1)


@pytest.mark.jax
def test_matches_jax_checkpoint() -> None:
    jax = needs("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    fj = jax.checkpoint(lambda x: jnp.sin(x) * x)
    want = jax.grad(lambda x: jnp.sum(fj(fj(x)) ** 2))(X)
    got = dk.grad(lambda x: dnp.sum(dk.checkpoint(f)(dk.checkpoint(f)(x)) ** 2))(X)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_memory_vs_recompute_report(tmp_path) -> None:  # noqa: ANN001
    from diffkit.reporting.report import build
    from diffkit.reporting.spec import experiment

    spec = {"experiment": "memory_vs_recompute",
            "setup": {"lengths": [4, 9], "size": 50, "snapshots": [2]}}
    assert experiment(spec) == "memory_vs_recompute"
    build(spec, tmp_path)
    assert (tmp_path / "memory_vs_recompute.png").stat().st_size > 10_000
    import json

    rows = json.loads((tmp_path / "recompute.json").read_text())["rows"]
    calls = {(r["strategy"], r["n"]): r["step_calls"] for r in rows}
    assert calls[("plain tape", 9)] == 9
    assert calls[("checkpoint every √n", 9)] == 18  # one extra forward pass
    assert calls[("revolve, 2 snapshots", 9)] == fewest(9, 2) + 9
