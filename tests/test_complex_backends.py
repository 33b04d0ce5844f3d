"""Complex inputs in every backend and transform, against closed forms.

For ``f(z) = sum |sin z|^2`` (real-valued), JAX's gradient is ``2 conj(sin z) cos z``
(``df/dx - i df/dy``); for the holomorphic ``g(z) = sin(z) z`` the Jacobian is
``diag(cos(z) z + sin(z))``. Forward, reverse, compiled and central differences give
them, and so does SymPy (tests/test_complex_symbolic.py); the complex step says why it
cannot (NotApplicable), and so do the primitives without complex rules.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk
import diffkit.numpy as dnp

Z = np.array([1.0 + 2.0j, 0.5 - 1.0j, -0.3 + 0.2j])
GRAD = 2.0 * np.conj(np.sin(Z)) * np.cos(Z)
HOLO = np.diag(np.cos(Z) * Z + np.sin(Z))


def loss(z):
    return dnp.sum(dnp.abs(dnp.sin(z)) ** 2)


def holo(z):
    return dnp.sin(z) * z


@pytest.mark.parametrize("backend", ["forward", "reverse", "compiled", "compiled[fuse=false]",
                                     "numeric", "numeric[method=richardson]", "symbolic"])
def test_every_backend_gives_jax_s_gradient(backend: str) -> None:
    rtol = 1e-6 if backend.startswith("numeric") else 1e-12
    assert_close(dk.grad(loss, backend=backend)(Z), GRAD, rtol=rtol)
    assert_close(dk.jacobian(holo, backend=backend, holomorphic=True)(Z), HOLO, rtol=rtol)
    assert_close(dk.jvp(holo, (Z,), (1j * Z,), backend=backend)[1], np.diag(HOLO) * 1j * Z,
                 rtol=rtol)


@pytest.mark.torch
def test_the_torch_convention_is_the_conjugate() -> None:
    """PyTorch's z.grad for a real loss is conj of JAX's gradient (docs/complex.md)."""
    torch = needs("torch")
    z = torch.tensor(Z, requires_grad=True)
    torch.sum(torch.abs(torch.sin(z)) ** 2).backward()
    assert_close(np.conj(dk.grad(loss)(Z)), z.grad.numpy(), rtol=1e-13)


def test_vmap_of_a_complex_gradient() -> None:
    batch = np.stack([Z, 2.0 * Z])
    expected = 2.0 * np.conj(np.sin(batch)) * np.cos(batch)
    assert_close(dk.vmap(dk.grad(loss))(batch), expected, rtol=1e-13)


def test_arguments_mixing_real_and_complex_leaves() -> None:
    """A real leaf beside a complex one is seen real by f and gets a real gradient."""
    def f(params):
        return dnp.sum(dnp.abs(params["z"] * params["scale"]) ** 2)

    g = dk.grad(f)({"z": Z, "scale": 2.0})
    assert isinstance(g["scale"], np.floating) and np.iscomplexobj(g["z"])
    assert_close(g["z"], 8.0 * np.conj(Z), rtol=1e-13)
    assert_close(g["scale"], 2 * 2.0 * np.sum(np.abs(Z) ** 2), rtol=1e-13)


def test_the_complex_step_is_not_applicable() -> None:
    with pytest.raises(dk.NotApplicable, match="needs a real input") as info:
        dk.grad(loss, backend="numeric[method=complex]")(Z)
    assert "\n" not in str(info.value)
    with pytest.raises(dk.NotApplicable, match="needs a real input"):
        dk.hessian(lambda z: dnp.sum(dnp.sin(z)), backend="numeric[method=complex]",
                   holomorphic=True)(Z)


def test_complex_step_explained_by_complex_derivatives() -> None:
    """The complex step reads Im f(x + ih)/h = f'(x) only for f analytic at real x: |x| is
    sqrt(x^2) there with the complex z, not |z|. AD of |z| gives its real derivative."""
    x = np.array([-1.5, 0.7])
    step = dk.grad(lambda v: dnp.sum(dnp.abs(v)), backend="numeric[method=central]")(x)
    assert_close(step, np.sign(x), rtol=1e-9)
    with pytest.raises(dk.NotApplicable, match="not complex-step safe"):
        dk.grad(lambda v: dnp.sum(dnp.abs(v)), backend="numeric[method=complex]")(x)
    assert_close(dk.grad(lambda z: dnp.abs(z))(1j * 0.5 + 0.5), (1 - 1j) / np.sqrt(2), rtol=1e-15)


def test_taylor_mode_refuses_complex_series() -> None:
    for run in (lambda: dk.jet(dnp.sin, (1 + 2j,), ((1.0,),)),
                lambda: dk.derivatives(dnp.sin, 3)(1 + 2j)):
        with pytest.raises(dk.DiffkitError, match="Taylor mode .* takes real series"):
            run()


def test_tensor_grad_follows_the_same_convention() -> None:
    """dk.tensor's .grad is JAX's gradient too (PyTorch's .grad is its conjugate)."""
    t = dk.tensor(Z, requires_grad=True)
    dnp.sum(dnp.abs(dnp.sin(t)) ** 2).backward()
    assert_close(t.grad, GRAD, rtol=1e-13)


def test_other_transforms_with_complex_inputs() -> None:
    """derivative and sparse_jacobian of a holomorphic f give f'(z); hvp is the JVP of the
    gradient (as jax.jvp(jax.grad(f)))."""
    assert_close(dk.derivative(dnp.sin)(Z), np.cos(Z), rtol=1e-13)
    assert_close(dk.sparse_jacobian(dnp.sin)(Z).toarray(), np.diag(np.cos(Z)), rtol=1e-13)
    v = np.array([1j, 0.5, -1.0])
    assert_close(dk.hvp(lambda z: dnp.sum(dnp.abs(z) ** 2))(Z, v), 2 * np.conj(v), rtol=1e-13)
