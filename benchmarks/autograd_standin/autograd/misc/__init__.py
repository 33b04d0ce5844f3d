"""autograd.misc: flatten (a pytree as one vector), const_graph (not mapped)."""
from .flatten import flatten  # noqa: F401


def const_graph(fun, *args, **kwargs):
    return fun
