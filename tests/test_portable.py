"""Primitives computed through another array namespace (the array API), here numpy's own.

Peer backends (JAX, PyTorch) run diffkit.numpy code on their arrays through
``diffkit.core.using(xp)``; numpy 2 implements the array-API names, so the same path
can be checked here, without any optional dependency.
"""

import numpy as np
import pytest

import diffkit.numpy as dnp
from diffkit import primitives
from diffkit.bench import catalog
from diffkit.core import using


@pytest.mark.parametrize("name", [n for n in catalog.names() if n != "robertson"])  # (refused)
def test_catalog_functions_agree_through_the_array_api(name):
    f, x = catalog.get(name).make()
    x = np.asarray(x, dtype=float)
    with using(np):
        through = f(x)
    np.testing.assert_allclose(through, f(x), rtol=1e-14, atol=1e-300)


def test_structural_and_reduction_primitives():
    x = np.arange(24.0).reshape(2, 3, 4) / 7
    programs = [
        lambda v: dnp.transpose(v, (2, 0, 1)), lambda v: dnp.reshape(v, (4, 6)),
        lambda v: dnp.concatenate([v, v * 2], axis=1), lambda v: dnp.stack([v, v], axis=-1),
        lambda v: v[:, [0, 2], 1:], lambda v: dnp.logsumexp(v, axis=(0, 2)),
        lambda v: dnp.broadcast_to(v[0, 0], (5, 4)), lambda v: dnp.where(v > 1, v, -v),
        lambda v: dnp.max(v, axis=1) + dnp.min(v) + dnp.prod(v[0] + 1, axis=0),
        lambda v: dnp.arcsin(v / 4) + dnp.arccos(v / 4) + dnp.arctan(v) + dnp.sigmoid(v),
        lambda v: dnp.matmul(v, dnp.transpose(v, (0, 2, 1))) ** 0.5 - v[0, 0, 1],
    ]
    for prog in programs:
        with using(np):
            through = prog(x)
        np.testing.assert_allclose(through, prog(x), rtol=1e-14)


def test_every_forward_primitive_is_portable_or_backward_only():
    # used by derivative rules only, never by a program: scatter_add and scatter (adjoints of
    # indexing and of a gather), adjugate (det's derivative), ive_derivative (ive's)
    backward_only = {"scatter_add", "scatter", "adjugate", "ive_derivative"}
    for prim in primitives.table().values():
        if prim.name in backward_only:
            continue
        api = prim.array_api or prim.name
        assert callable(api) or hasattr(np, api), prim.name
