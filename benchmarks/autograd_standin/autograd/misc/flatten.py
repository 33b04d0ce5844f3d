"""autograd.misc.flatten: a pytree as one flat vector and the function that rebuilds it."""
import math

import diffkit.numpy as dnp
from diffkit.core import shape
from diffkit.pytree import flatten as _leaves


def flatten(value):
    leaves, rebuild = _leaves(value)
    shapes = [shape(v) for v in leaves]
    flat = dnp.concatenate([dnp.ravel(v) for v in leaves]) if leaves else dnp.zeros(0)

    def unflatten(vector):
        out, start = [], 0
        for s in shapes:
            n = math.prod(s)
            out.append(dnp.reshape(vector[start:start + n], s))
            start += n
        return rebuild(out)
    return flat, unflatten
