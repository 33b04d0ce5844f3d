"""autograd.test_util on diffkit: derivatives against central differences.

``check_grads(f, argnum, modes, order)(*args)`` checks forward mode (``dk.jvp`` against a
difference quotient along a random direction) and reverse mode (``dk.vjp``, by the pairing
``Re sum(u (J v)) == Re sum(vjp(u) v)``), in real and complex directions, on pytrees of
arguments and outputs; order 2 checks the derivative functions again, as autograd does.
"""
from itertools import product

import numpy as np

import diffkit as dk
from diffkit.core import Box, primal
from diffkit.pytree import flatten

from .wrap_util import get_name, unary_to_nary

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _leaves(tree):
    return [primal(v) if isinstance(v, Box) else v for v in flatten(tree)[0]]


def _random_like(tree, rng=np.random):
    leaves, rebuild = flatten(tree)
    out = []
    for v in leaves:
        v = np.asarray(primal(v))
        r = np.asarray(rng.randn(*v.shape))
        if np.iscomplexobj(v):
            r = r + 1j * np.asarray(rng.randn(*v.shape))
        out.append(r[()] if r.ndim == 0 else r)
    return rebuild(out)


def _combine(a, b, s):
    la, rebuild = flatten(a)
    return rebuild([x + s * y for x, y in zip(la, flatten(b)[0])])


def _pair(a, b):
    """Re sum(conj(a) b) over the leaves: autograd's inner product."""
    return float(sum(np.real(np.sum(np.conj(np.asarray(x)) * np.asarray(y)))
                     for x, y in zip(_leaves(a), _leaves(b))))


def _numeric_jvp(f, x, v):
    return _combine(f(_combine(x, v, EPS / 2)), f(_combine(x, v, -EPS / 2)), -1.0), EPS


def check_equivalent(x, y):
    v = _random_like(x)
    assert scalar_close(_pair(x, v), _pair(y, v)), f"Value mismatch:\nx: {x}\ny: {y}"


def _check_jvp(f, x):
    v = _random_like(x)
    _, y_dot = dk.jvp(f, (x,), (v,))
    diff, eps = _numeric_jvp(f, x, v)
    w = _random_like(y_dot)
    assert scalar_close(_pair(w, y_dot), _pair(w, diff) / eps), \
        f"Derivative (JVP) check of {get_name(f)} failed with arg {x}"


def _check_vjp(f, x):
    y, pull = dk.vjp(f, x)
    u = _random_like(y)
    (x_bar,) = pull(_conj(u))
    v = _random_like(x)
    diff, eps = _numeric_jvp(f, x, v)
    exact = _pair(_conj(x_bar), v)
    assert scalar_close(_pair(u, diff) / eps, exact), \
        f"Derivative (VJP) check of {get_name(f)} failed with arg {x}: {exact} vs " \
        f"{_pair(u, diff) / eps}"


def _conj(tree):
    leaves, rebuild = flatten(tree)
    return rebuild([np.conj(v) if np.iscomplexobj(primal(v)) else v for v in leaves])


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2):
    assert all(m in ("fwd", "rev") for m in modes)
    if "fwd" in modes:
        _check_jvp(f, x)
        if order > 1:
            def jvp_f(x, v):
                return dk.jvp(f, (x,), (v,))[1]
            jvp_f.__name__ = f"jvp_{get_name(f)}"
            check_grads(jvp_f, (0, 1), modes, order=order - 1)(x, _random_like(x))
    if "rev" in modes:
        _check_vjp(f, x)
        if order > 1:
            def vjp_f(x, u):
                return dk.vjp(f, x)[1](u)[0]
            vjp_f.__name__ = f"vjp_{get_name(f)}"
            check_grads(vjp_f, (0, 1), modes, order=order - 1)(x, _random_like(f(x)))


def combo_check(fun, *args, **kwargs):
    def _combo_check(*arg_lists, **kwarg_lists):
        pairs = [[(k, v) for v in vs] for k, vs in kwarg_lists.items()]
        for chosen in product(*arg_lists):
            for kw in product(*pairs):
                check_grads(fun, *args, **kwargs)(*chosen, **dict(kw))
    return _combo_check
