"""Patterns, coloured derivatives and Taylor mode on random programs over the whole table.

A pattern may be too dense, never too sparse: every non-zero of the Jacobian (and
Hessian) of a random program lies in it, and the coloured derivative equals the dense
one. Taylor mode's derivatives up to order 3 equal nested forward mode's (itself judged
against 40-digit references in test_differential.py).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

import diffkit as dk
import strategies as S

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def test_patterns_cover_the_jacobians_of_random_programs():
    judged = []

    @SETTINGS
    @given(S.programs("jacobian", max_ops=5))
    def check(p):
        f, x = p.function(), p.point()
        pattern = dk.jacobian_sparsity(f)(x)
        jac = np.reshape(dk.jacobian(f, backend="forward")(x), pattern.shape)
        assert not np.any((jac != 0) & ~pattern.toarray()), p.pretty()
        coloured = dk.sparse_jacobian(f)(x).toarray()
        assert np.allclose(coloured, jac, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(jac).max())), \
            p.pretty()
        judged.append(p)

    check()
    assert len(judged) >= 20


def test_hessian_patterns_cover_random_programs():
    judged = []

    @SETTINGS
    @given(S.programs("hessian", max_ops=4))
    def check(p):
        f, x = p.function(), p.point()
        if np.ndim(x) == 0:
            x = np.atleast_1d(x)
            f = (lambda g: lambda v: g(v[0]))(f)
        pattern = dk.hessian_sparsity(f)(x)
        h = np.reshape(dk.hessian(f)(x), pattern.shape)
        assert not np.any((h != 0) & ~pattern.toarray()), p.pretty()
        coloured = dk.sparse_hessian(f)(x).toarray()
        assert np.allclose(coloured, h, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(h).max())), \
            p.pretty()
        judged.append(p)

    check()
    assert len(judged) >= 20


def test_taylor_mode_equals_nested_forward_on_random_elementwise_programs():
    judged = []

    @SETTINGS
    @given(S.elementwise_programs())
    def check(p):
        f, x = p.function(), p.point()
        taylor = dk.derivatives(f, 3)(x)
        nested = [f(x)]
        g = f
        for _ in range(3):
            g = dk.derivative(g)
            nested.append(g(x))
        for k, (a, b) in enumerate(zip(taylor, nested)):
            scale = max(1.0, float(np.max(np.abs(b))))
            assert np.allclose(a, b, rtol=1e-9, atol=1e-9 * scale), f"order {k}\n{p.pretty()}"
        judged.append(p)

    check()
    assert len(judged) >= 20
