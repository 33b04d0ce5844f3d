"""autograd's differential operators, each written with diffkit's vjp and jvp."""
import numpy as _np

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.core import primal

from .wrap_util import unary_to_nary


@unary_to_nary
def make_vjp(fun, x):
    try:
        y, pull = dk.vjp(fun, x)
    except dk.DiffkitError as e:
        if "requires a float output" in str(e):  # (autograd's error type for a bool output)
            raise TypeError(str(e)) from None
        raise
    return (lambda g: pull(g)[0]), y


@unary_to_nary
def make_jvp(fun, x):
    return lambda v: dk.jvp(fun, (x,), (v,))


def _ones_like(y):
    return _np.ones(_np.shape(primal(y)), _np.result_type(primal(y)))


@unary_to_nary
def grad(fun, x):
    """
    Returns a function which computes the gradient of `fun` with respect to
    positional argument number `argnum`: the VJP of 1.0 (diffkit's dk.vjp).
    """
    pull, y = make_vjp(fun)(x)
    kind = _np.result_type(primal(y)).kind
    if _np.size(primal(y)) != 1 or kind not in "f":
        raise TypeError("Grad only applies to real scalar-output functions. "
                        "Try jacobian, elementwise_grad or holomorphic_grad.")
    return pull(_ones_like(y))


@unary_to_nary
def elementwise_grad(fun, x):
    pull, y = make_vjp(fun)(x)
    return pull(_ones_like(y))


@unary_to_nary
def deriv(fun, x):
    return make_jvp(fun)(x)(_ones_like(x))[1]


@unary_to_nary
def jacobian(fun, x):
    """Rows of VJPs, one per output entry: shape out + in (autograd's layout)."""
    pull, y = make_vjp(fun)(x)
    y_shape = _np.shape(primal(y))
    basis = _np.eye(max(_np.size(primal(y)), 1), dtype=_np.result_type(primal(y)))
    rows = [pull(e.reshape(y_shape)) for e in basis[:_np.size(primal(y))]]
    if not rows:
        return _np.zeros(y_shape + _np.shape(primal(x)))
    return dnp.reshape(dnp.stack(rows), y_shape + _np.shape(primal(x)))


@unary_to_nary
def holomorphic_grad(fun, x):
    return grad(lambda z: dnp.real(fun(z)))(x)


def hessian(fun, argnum=0):
    return jacobian(jacobian(fun, argnum), argnum)


@unary_to_nary
def value_and_grad(fun, x):
    pull, y = make_vjp(fun)(x)
    return y, pull(_ones_like(y))


@unary_to_nary
def grad_and_aux(fun, x):
    aux = []

    def value(z):
        out, extra = fun(z)
        aux.append(extra)
        return out
    pull, y = make_vjp(value)(x)
    return pull(_ones_like(y)), aux[-1]


@unary_to_nary
def make_hvp(fun, x):
    return make_vjp(grad(fun))(x)


def hessian_tensor_product(fun, argnum=0):
    fun_grad = grad(fun, argnum)

    def dot_with_last(*args, **kwargs):
        return dnp.tensordot(fun_grad(*args[:-1], **kwargs), args[-1], _np.ndim(args[-1]))
    return grad(dot_with_last, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    def dot_with_last(*args, **kwargs):
        return dnp.tensordot(args[-1], fun(*args[:-1], **kwargs), _np.ndim(args[-1]))
    return jacobian(dot_with_last, argnum)


vector_jacobian_product = tensor_jacobian_product


def make_ggnvp(f, g=lambda y: 0.5 * dnp.sum(y ** 2, axis=-1), f_argnum=0):
    """The Gauss-Newton product v -> J^T H_g J v at x, as a function of f's arguments."""
    @unary_to_nary
    def at(f, x):
        f_vjp, f_x = make_vjp(f)(x)
        g_hvp, _ = make_hvp(g)(f_x)
        return lambda v: f_vjp(g_hvp(make_jvp(f)(x)(v)[1]))
    return at(f, f_argnum)


def grad_named(fun, argname):
    import inspect
    names = list(inspect.signature(fun).parameters)
    return grad(fun, names.index(argname))


def multigrad_dict(fun):
    import inspect
    names = list(inspect.signature(fun).parameters)

    def gradfun(*args, **kwargs):
        bound = inspect.signature(fun).bind(*args, **kwargs)
        bound.apply_defaults()
        values = [bound.arguments[n] for n in names]
        grads = grad(lambda *a: fun(*a), tuple(range(len(names))))(*values)
        return dict(zip(names, grads))
    return gradfun


def checkpoint(fun):
    return dk.checkpoint(fun)


__all__ = ["checkpoint", "deriv", "elementwise_grad", "grad", "grad_and_aux",
           "grad_named", "hessian", "hessian_tensor_product", "hessian_vector_product",
           "holomorphic_grad", "jacobian", "make_ggnvp", "make_hvp", "make_jvp", "make_vjp",
           "multigrad_dict", "tensor_jacobian_product", "value_and_grad",
           "vector_jacobian_product"]
