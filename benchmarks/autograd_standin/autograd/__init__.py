"""A stand-in for autograd, for running autograd's own test suite against diffkit
(benchmarks/autograd_suite.py): autograd's names, diffkit's derivatives.

Each differential operator is written with diffkit's transforms (``dk.vjp``, ``dk.jvp``);
``autograd.numpy`` is ``diffkit.numpy`` with numpy's remaining names behind it (a numpy
function diffkit lacks fails on a value being differentiated, which the suite counts).
autograd's conventions are JAX's (diffkit's) for complex numbers; one difference is kept
here, in the stand-in: autograd's ``grad`` of a complex output is the gradient of its real
part (the VJP of 1.0), where diffkit and JAX ask for ``holomorphic=True``.
"""
from .builtins import dict, isinstance, list, tuple, type  # noqa: A004
from .differential_operators import (checkpoint, deriv, elementwise_grad, grad, grad_and_aux,
                                     grad_named, hessian, hessian_tensor_product,
                                     hessian_vector_product, holomorphic_grad, jacobian,
                                     make_ggnvp, make_hvp, make_jvp, make_vjp, multigrad_dict,
                                     tensor_jacobian_product, value_and_grad,
                                     vector_jacobian_product)
from .extend import primitive

__all__ = ["checkpoint", "deriv", "dict", "elementwise_grad", "grad", "grad_and_aux",
           "grad_named", "hessian", "hessian_tensor_product", "hessian_vector_product",
           "holomorphic_grad", "isinstance", "jacobian", "list", "make_ggnvp", "make_hvp",
           "make_jvp", "make_vjp", "multigrad_dict", "primitive", "tensor_jacobian_product",
           "tuple", "type", "value_and_grad", "vector_jacobian_product"]
