"""The race's workloads (diffkit.bench.workloads) differentiate to the right values on
every way the race runs them: closed forms where they exist, jax.grad otherwise."""

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
from diffkit.bench import workloads as wl

WAYS = ["reverse", "compiled", "compiled[fuse=false]"]


@pytest.mark.parametrize("backend", WAYS)
def test_nested_sines_against_the_chain_rule(backend):
    x = np.linspace(-1.0, 1.0, 7)
    expected, v = np.ones_like(x), x
    for _ in range(10):  # d sin^10(x) = Π cos(sin^k(x))
        expected, v = expected * np.cos(v), np.sin(v)
    np.testing.assert_allclose(dk.grad(wl.nested_sines, backend=backend)(x), expected,
                               rtol=1e-13)


@pytest.mark.parametrize("backend", WAYS)
def test_heat_stencil_is_linear_so_its_gradient_is_twice_the_transpose(backend):
    # u_T = A^steps u0 with A the stencil matrix (ends fixed); grad Σ u_T² = 2 (A^T)^s A^s u0
    n, steps, r = 9, 5, 0.25
    A = np.eye(n)
    for i in range(1, n - 1):
        A[i, i - 1:i + 2] += r * np.array([1.0, -2.0, 1.0])
    M = np.linalg.matrix_power(A, steps)
    u0 = np.sin(np.arange(n, dtype=float))
    grad = dk.grad(lambda u: wl.heat_stencil(u, steps=steps, r=r), backend=backend)(u0)
    np.testing.assert_allclose(grad, 2.0 * M.T @ M @ u0, rtol=1e-12)


@pytest.mark.jax
@pytest.mark.parametrize("backend", WAYS)
def test_mlp_and_softmax_against_jax(backend):
    jax = needs("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    params, X, y = wl.mlp_params(rng, 5, 7), rng.standard_normal((11, 5)), rng.standard_normal(11)
    value, grads = dk.value_and_grad(wl.mlp_loss, backend=backend)(params, X, y)
    j_value, j_grads = jax.value_and_grad(lambda p: wl.mlp_loss(p, X, y, np=jnp))(params)
    assert value == pytest.approx(float(j_value), rel=1e-13)
    assert len(grads) == 4
    for ours, theirs in zip(grads, j_grads):
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-11, atol=1e-14)
    W, Xs = 0.1 * rng.standard_normal((6, 3)), rng.standard_normal((8, 6))
    Y = np.eye(3)[rng.integers(0, 3, 8)]
    ours = dk.grad(wl.softmax_cross_entropy, backend=backend)(W, Xs, Y)
    theirs = jax.grad(lambda w: wl.softmax_cross_entropy(w, Xs, Y, np=jnp))(W)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-11, atol=1e-15)


def _stencil_matrix(n: int, steps: int, r: float = 0.25) -> np.ndarray:
    A = np.eye(n)
    for i in range(1, n - 1):
        A[i, i - 1:i + 2] += r * np.array([1.0, -2.0, 1.0])
    return np.linalg.matrix_power(A, steps)


@pytest.mark.jit
def test_stencil_steps_are_one_kernel_each_not_one_recomputing_kernel():
    # each value is needed at the step before's i-1, i, i+1: one kernel for all steps
    # would recompute 3^steps values per element; the values views read at shifted
    # indices are written to memory instead, a kernel per step
    u, M = np.sin(np.arange(40.0)), _stencil_matrix(40, 30)
    be = dk.backend("compiled")
    grad = dk.grad(lambda v: wl.heat_stencil(v, steps=30), backend=be)(u)
    assert be.last.fusion.startswith("121 kernels, 30 library calls: ")
    np.testing.assert_allclose(grad, 2.0 * M.T @ M @ u, rtol=1e-12, atol=1e-15)


@pytest.mark.jit
def test_a_kernel_still_too_large_runs_unfused_and_says_so(monkeypatch):
    from diffkit.compiler import kernel_ir

    monkeypatch.setattr(kernel_ir, "MAX_INSTRUCTIONS", 3)
    u, M = np.sin(np.arange(20.0)), _stencil_matrix(20, 5)
    be = dk.backend("compiled")
    grad = dk.grad(lambda v: wl.heat_stencil(v, steps=5), backend=be)(u)
    assert be.last.fusion.startswith("run unfused: one fused kernel would take more than 3 ")
    np.testing.assert_allclose(grad, 2.0 * M.T @ M @ u, rtol=1e-12)


def _cnn_case() -> tuple:
    rng = np.random.default_rng(1)
    params = wl.cnn_params(rng, channels=3, size=6, classes=4)
    return params, rng.standard_normal((5, 1, 6, 6)), np.eye(4)[rng.integers(0, 4, 5)]


@pytest.mark.jax
def test_cnn_gradient_compiled_equals_eager_reverse_and_jax():
    # the race's CNN: diffkit's default compiled gradient (fused kernels) against eager
    # reverse and against jax.grad of jax's own spelling (lax.conv_general_dilated)
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    params, X, Y = _cnn_case()
    compiled = dk.grad(wl.cnn_loss, backend="compiled")(params, X, Y)
    eager = dk.grad(wl.cnn_loss)(params, X, Y)
    theirs = jax.grad(lambda p: wl.cnn_loss(p, X, Y, np=jax.numpy))(params)
    assert [np.shape(g) for g in compiled] == [p.shape for p in params]
    for ours, reverse, reference in zip(compiled, eager, theirs):
        np.testing.assert_allclose(ours, reverse, rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(ours, np.asarray(reference), rtol=1e-10, atol=1e-15)
    program = dk.jit(dk.grad(wl.cnn_loss)).program(params, X, Y)
    assert " kernels, " in program.fusion and "unfused" not in program.fusion, program.fusion


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.autograd
def test_cnn_convolution_spellings_agree():
    torch = needs("torch")
    jax = needs("jax")
    jax.config.update("jax_enable_x64", True)
    params, X, Y = _cnn_case()
    ours = wl.conv2d_same(X, params[0])
    np.testing.assert_allclose(np.asarray(wl.conv2d_same(X, params[0], np=jax.numpy)), ours,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(wl.conv2d_same(torch.from_numpy(X), torch.from_numpy(params[0]),
                                              np=torch).numpy(), ours, rtol=1e-13, atol=1e-15)
    grads = torch.func.grad(lambda p: wl.cnn_loss(p, torch.from_numpy(X), torch.from_numpy(Y),
                                                  np=torch))(tuple(map(torch.from_numpy, params)))
    theirs = jax.grad(lambda p: wl.cnn_loss(p, X, Y, np=jax.numpy))(params)
    for g, reference in zip(grads, theirs):
        np.testing.assert_allclose(g.numpy(), np.asarray(reference), rtol=1e-10, atol=1e-15)
    with pytest.raises(dk.DiffkitError, match="no convolution for namespace 'autograd.numpy'"):
        wl.conv2d_same(X, params[0], np=needs("autograd", "autograd.numpy"))
