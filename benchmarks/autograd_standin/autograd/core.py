"""autograd.core: the parts of autograd's internals the stand-in maps (make_vjp, vspace)."""
from . import differential_operators as _ops
from .extend import defvjp, primitive, vspace  # noqa: F401

primitive_vjps: dict = {}


def make_vjp(fun, x):
    """autograd.core's unary form: ``(vjp, f(x))``."""
    return _ops.make_vjp(fun)(x)


def make_jvp(fun, x):
    return _ops.make_jvp(fun)(x)
