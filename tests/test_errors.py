"""User mistakes: each is one clear line (DiffkitError or TypeError) naming what to do."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp


def raises(exc: type[Exception], fn: Callable[[], Any], *fragments: str) -> str:
    """Run ``fn``; it must raise ``exc`` with a one-line message holding every fragment."""
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg, f"message is not one line: {msg!r}"
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


def test_diffkit_error_is_a_value_error() -> None:
    assert issubclass(dk.DiffkitError, ValueError)


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_grad_of_non_scalar_output(backend: str) -> None:
    msg = raises(dk.DiffkitError, lambda: dk.grad(lambda x: x * 2.0, backend=backend)(np.ones(3)),
                 "scalar", "(3,)")
    assert "jacobian" in msg or "vjp" in msg
    raises(dk.DiffkitError, lambda: dk.value_and_grad(dnp.sin, backend=backend)(np.ones(2)),
           "scalar")


@pytest.mark.parametrize("argnums", [2, -3, (0, 5), (1, -4)])
def test_argnums_out_of_range(argnums: Any) -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x, y: x * y, argnums=argnums)(1.0, 2.0),
           "argnums", "out of range", "2 positional arguments")


def test_argnums_out_of_range_in_other_transforms() -> None:
    raises(dk.DiffkitError, lambda: dk.jacobian(dnp.sin, argnums=1)(1.0), "argnums")
    raises(dk.DiffkitError, lambda: dk.hessian(dnp.sin, argnums=1)(1.0), "argnums")


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_string_input(backend: str) -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: x, backend=backend)("abc"),
           "argument 0", "real number or array", "str")
    raises(dk.DiffkitError, lambda: dk.tensor("abc"), "real number or array")


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_object_input(backend: str) -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: x, backend=backend)(object()),
           "real number or array", "object")
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: x, backend=backend)([[1.0, 2.0], [3.0]]),
           "got list")  # a ragged list is a tree; returning it is not a scalar
    # None is an empty tree (as JAX: tests/test_containers_none.py); returning it is no scalar
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: x, backend=backend)(None),
           "return a real number or array", "NoneType")


@pytest.mark.parametrize("value", [1 + 2j, np.ones(2, dtype=complex), np.complex64(1j)])
def test_complex_input_errors_are_jax_s(value: Any) -> None:
    """Complex inputs are differentiated (docs/complex.md); what JAX refuses is refused
    with JAX's words, in one line."""
    for fn, words in [(lambda: dk.grad(lambda x: dnp.sum(x))(value),
                       ("grad requires real-valued outputs", "holomorphic=True")),
                      (lambda: dk.jacfwd(dnp.sin)(value),
                       ("jacfwd requires real-valued inputs", "holomorphic=True", "dk.jvp")),
                      (lambda: dk.jacrev(dnp.sin)(value),
                       ("jacrev requires real-valued outputs", "dk.vjp")),
                      (lambda: dk.grad(dnp.sin, holomorphic=True)(1.0),
                       ("holomorphic=True requires inputs with complex dtype", "float64")),
                      (lambda: dk.jvp(dnp.sin, (1.0,), (1j,)),
                       ("tangent 0 is complex but its primal is real",))]:
        raises(dk.DiffkitError, fn, *words)


def test_backward_through_released_tape() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    y = dnp.sum(dnp.sin(x) * x)
    y.backward()
    raises(dk.DiffkitError, y.backward, "released", "retain_graph=True")
    # dk.gradients releases it too (like torch.autograd.grad)
    z = dnp.sum(x * x)
    dk.gradients(z, x)
    raises(dk.DiffkitError, z.backward, "retain_graph")


def test_backward_gradient_of_wrong_shape() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    raises(dk.DiffkitError, lambda: y.backward(gradient=np.ones(3)), "(3,)", "(2,)", "match")
    raises(dk.DiffkitError, lambda: y.backward(gradient=1.0), "()", "(2,)")


def test_backward_on_non_scalar_without_gradient() -> None:
    x = dk.tensor([1.0, 2.0], requires_grad=True)
    raises(dk.DiffkitError, (x * x).backward, "gradient=", "(2,)")
    assert x.grad is None


def test_backward_on_tensor_without_grad() -> None:
    raises(dk.DiffkitError, dk.tensor(1.0).backward, "requires_grad=True")
    raises(dk.DiffkitError, lambda: dk.gradients(dk.tensor(1.0) * 2.0, dk.tensor(1.0)),
           "require")


def test_jvp_tangent_mismatch() -> None:
    raises(dk.DiffkitError, lambda: dk.jvp(dnp.sin, (np.ones(3),), (np.ones(2),)),
           "tangent", "(2,)", "(3,)")
    raises(dk.DiffkitError, lambda: dk.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,)),
           "2 primals but 1 tangents")


def test_vjp_cotangent_mismatch() -> None:
    _, pull = dk.vjp(dnp.sin, np.ones(3))
    raises(dk.DiffkitError, lambda: pull(np.ones(2)), "cotangent", "(2,)", "(3,)")


def test_unknown_backend_lists_available() -> None:
    msg = raises(dk.DiffkitError, lambda: dk.grad(dnp.sin, backend="nope")(1.0),
                 "unknown backend", "'nope'", "available")
    for name in ("forward", "reverse"):
        assert name in msg
    assert set(dk.backends()) >= {"forward", "reverse"}
    raises(dk.DiffkitError, lambda: dk.grad(dnp.sin, backend=3)(1.0), "backend=")


def test_unknown_backend_option() -> None:
    raises(dk.DiffkitError, lambda: dk.backend("forward", step=1e-3),
           "'forward'", "no option 'step'", "options")
    raises(dk.DiffkitError, lambda: dk.backend("reverse", foo=1), "no option 'foo'")


def test_function_returning_non_array() -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: "a")(1.0), "real number or array", "str")
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: [x, x])(1.0), "has_aux")
    raises(dk.DiffkitError, lambda: dk.jvp(lambda x: "a", (1.0,), (1.0,)), "real number", "str")
    # None is an empty tree (as JAX): its jvp is (None, None), no error
    assert dk.jvp(lambda x: None, (1.0,), (1.0,)) == (None, None)


def test_derivative_needs_elementwise_function() -> None:
    raises(dk.DiffkitError, lambda: dk.derivative(dnp.sum)(np.ones(3)),
           "elementwise", "dk.grad", "dk.jacobian")


def test_numpy_namespace_misuse() -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: dnp.sum(x, axis=3))(np.ones(2)),
           "axis 3", "out of bounds")
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: dnp.matmul(x, np.ones(2)))(2.0),
           "matmul", "scalars")
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: dnp.sum(np.fft.hfft(x)))(np.ones(4)),
           "numpy.fft", "diffkit.numpy")
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: np.sum(np.add.reduce(x)))(np.ones(2)),
           "numpy.add.reduce")
    # converting a box to a plain array silently would drop its derivative
    raises(TypeError, lambda: dk.grad(lambda x: np.asarray(x).sum())(np.ones(2)), "dnp")
    raises(TypeError, lambda: dk.grad(lambda x: float(x))(1.0), ".item()")
    raises(TypeError, lambda: dk.grad(lambda x: len(x) * x)(1.0), "len()")


HAS_AUX_BUG = ("BUG: with has_aux=True the output is unpacked with `y, aux = y` without a check "
               "(forward.push_forward, reverse.record): an array output of length 2 is silently "
               "split into value=y[0], aux=y[1] (a wrong gradient), and a scalar output raises "
               "TypeError 'len() of a 0-d value' instead of a DiffkitError naming has_aux")


@pytest.mark.parametrize("backend", ["forward", "reverse"])
def test_has_aux_without_a_pair(backend: str) -> None:
    raises(dk.DiffkitError, lambda: dk.grad(lambda x: x ** 2, has_aux=True, backend=backend)(1.0),
           "has_aux")
    raises(dk.DiffkitError,
           lambda: dk.grad(lambda x: x ** 2, has_aux=True, backend=backend)(np.array([1.0, 3.0])),
           "has_aux")
