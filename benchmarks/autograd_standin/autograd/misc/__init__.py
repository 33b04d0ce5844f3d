"""autograd.misc: flatten (a pytree as one vector); const_graph, autograd's "trace once,
replay the graph" is dk.jit of the function with its fixed arguments bound."""
import functools

import diffkit as dk

from .flatten import flatten  # noqa: F401


def const_graph(fun, *args, **kwargs):
    return dk.jit(functools.partial(fun, *args, **kwargs) if args or kwargs else fun)
