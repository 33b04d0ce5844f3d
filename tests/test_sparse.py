"""Sparsity patterns, colourings and sparse Jacobians/Hessians.

Patterns are checked against known structures (the 5-point Laplacian, tridiagonal,
band) and against the non-zeros of dense Jacobians at random points (a pattern may be
denser, never sparser); coloured derivatives against dense ones and finite differences.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench import catalog
from diffkit.bench.structured import (arrowhead, banded_least_squares, bratu, chained_rosenbrock,
                                      random_sparse)
from diffkit.transforms import coloring

broyden = catalog.get("broyden").fn


def _dense_fd(f, x, h=1e-6):
    """Central differences of plain numpy code (independent of diffkit's AD)."""
    cols = [(np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def _covers(pattern, jac):
    """Every non-zero of ``jac`` is in ``pattern``."""
    return not np.any((np.abs(jac) > 0) & ~pattern.toarray())


def test_laplacian_pattern_is_the_five_point_stencil():
    m = 7
    t = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(m, m))
    five_point = sp.kronsum(t, t).toarray() != 0
    pattern = dk.jacobian_sparsity(bratu)(np.full(m * m, 0.1))
    assert pattern.dtype == bool and pattern.shape == (m * m, m * m)
    assert np.array_equal(pattern.toarray(), five_point)


@pytest.mark.parametrize("f, offsets", [(broyden, (-1, 0, 1)),
                                        (banded_least_squares, (-5, -4, -3, -2, -1, 0, 1))])
def test_banded_patterns(f, offsets):
    n = 12
    known = np.zeros((n, n), bool)
    for k in offsets:
        known |= np.eye(n, k=k, dtype=bool)
    assert np.array_equal(dk.jacobian_sparsity(f)(np.linspace(-1, 1, n)).toarray(), known)


def test_hessian_pattern_of_chained_rosenbrock_is_tridiagonal():
    n = 9
    known = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    pattern = dk.hessian_sparsity(chained_rosenbrock)(np.linspace(-1, 1, n)).toarray()
    assert np.array_equal(pattern, known)
    h = _dense_fd(lambda z: dk.grad(chained_rosenbrock)(z), np.linspace(-1, 1, n))
    assert _covers(sp.csr_array(pattern), np.where(np.abs(h) > 1e-6, h, 0.0))


def test_global_and_local_patterns_through_where_and_maximum():
    def f(x):
        return dnp.where(x > 0, x, 2.0 * x[::-1]) + dnp.maximum(x, 0.5)
    x = np.array([1.0, -1.0, 0.2])
    glob = dk.jacobian_sparsity(f)(x).toarray()
    local = dk.jacobian_sparsity(f, local=True)(x).toarray()
    assert np.array_equal(glob, np.eye(3, dtype=bool) | np.eye(3, dtype=bool)[::-1])
    # local: where takes x (entries 0, 2) or x[::-1] (entry 1 -> x[1]); maximum takes x only where x >= 0.5
    assert np.array_equal(local, np.eye(3, dtype=bool))
    assert _covers(sp.csr_array(local), _dense_fd(lambda z: np.where(z > 0, z, 2 * z[::-1])
                                                  + np.maximum(z, 0.5), x))


def test_patterns_of_structural_primitives_cover_the_jacobian():
    a = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    cases = [(lambda x: a @ x, np.ones(3)), (lambda x: x @ a.T, np.ones(3)),
             (dnp.cumsum, np.ones(4)), (lambda x: dnp.reshape(x, (2, 2)).T.ravel(), np.arange(4.0)),
             (lambda x: dnp.sum(dnp.reshape(x, (2, 3)), axis=0), np.arange(6.0)),
             (lambda x: dnp.linalg.solve(np.eye(3) + 1.0, x), np.ones(3)),
             (lambda x: x[[2, 0, 2]] * dnp.sign(x[:3]), np.arange(1.0, 5.0))]
    for f, x in cases:
        pattern = dk.jacobian_sparsity(f)(x)
        jac = np.reshape(dk.jacobian(f)(x), (pattern.shape[0], -1))
        assert _covers(pattern, jac)
    assert dk.jacobian_sparsity(lambda x: a @ x)(np.ones(3)).toarray().tolist() == \
        [[True, False, True], [False, False, True]]
    assert dk.jacobian_sparsity(dnp.cumsum)(np.ones(3)).toarray().sum() == 6
    assert dk.jacobian_sparsity(lambda x: dnp.sign(x) * 2.0)(np.ones(3)).nnz == 0


def test_colourings_are_valid_on_random_patterns():
    judged = []

    @settings(max_examples=40)
    @given(st.integers(min_value=5, max_value=40), st.integers(min_value=0, max_value=10 ** 6),
           st.sampled_from(["natural", "largest-first"]))
    def check(n, seed, order):
        rng = np.random.default_rng(seed)
        p = sp.random_array((n, n), density=0.15, random_state=rng).astype(bool)
        cols = coloring.column_coloring(p, order)
        dense = p.toarray()
        for c in range(cols.max() + 1):  # columns of a colour share no row
            assert dense[:, cols == c].sum(axis=1).max(initial=0) <= 1
        sym = (p + p.T + sp.eye_array(n)).astype(bool)
        star = coloring.star_coloring(sym, order)
        h = np.where(sym.toarray(), rng.standard_normal((n, n)), 0.0)
        h = h + h.T
        compressed = h @ coloring.seeds(star)
        assert np.allclose(coloring.decompress_star(sym, star, compressed).toarray(), h)
        judged.append(n)

    check()
    assert len(judged) >= 30


def test_tridiagonal_at_ten_thousand_three_colours_equal_to_dense():
    n = 10 ** 4
    x = np.linspace(-1.0, 1.0, n)
    jac = dk.sparse_jacobian(broyden)
    plan = jac.plan(x)
    assert (plan.colors, plan.mode, plan.passes) == (3, "forward", 3)
    s = jac(x)
    assert isinstance(s, sp.sparray) and s.shape == (n, n) and s.nnz == 3 * n - 2
    # the dense Jacobian of this residual, written out: diagonal 3 - 4x, -1 below, -2 above
    assert np.allclose(s.diagonal(), 3.0 - 4.0 * x, rtol=1e-15, atol=1e-15)
    assert np.array_equal(s.diagonal(-1), np.full(n - 1, -1.0))
    assert np.array_equal(s.diagonal(1), np.full(n - 1, -2.0))
    small = x[:60]
    assert np.array_equal(dk.sparse_jacobian(broyden)(small).toarray(), dk.jacobian(broyden)(small))


def test_cpr_uses_three_groups_six_evaluations():
    calls = []

    def counted(x):
        calls.append(1)
        return broyden(x)
    x = np.linspace(-1.0, 1.0, 500)
    cpr = dk.sparse_jacobian(counted, mode="cpr")
    plan = cpr.plan(x)
    calls.clear()
    s = cpr(x)
    assert (plan.colors, plan.passes, len(calls)) == (3, 6, 6)
    assert np.allclose(s.toarray(), dk.jacobian(broyden)(x), atol=1e-8)
    assert dk.sparse_jacobian(broyden, backend="numeric").plan(x).mode == "cpr"


@pytest.mark.parametrize("f, n", [(bratu, 25), (banded_least_squares, 30), (arrowhead, 12),
                                  (random_sparse, 30), (lambda x: dnp.sum(dnp.reshape(x, (-1, 3)), axis=1), 12)])
@pytest.mark.parametrize("mode", [None, "forward", "reverse"])
def test_sparse_jacobian_equals_dense(f, n, mode):
    x = np.linspace(-0.5, 0.7, n)
    jac = dk.sparse_jacobian(f, mode=mode)
    assert np.allclose(jac(x).toarray(), _dense_fd(f, x), atol=1e-7)
    assert np.allclose(jac(x).toarray(), np.reshape(dk.jacobian(f)(x), (-1, n)), rtol=1e-13, atol=1e-14)


def test_mode_is_chosen_by_colour_counts():
    x = np.linspace(0.1, 1.0, 20)
    one_row = dk.sparse_jacobian(lambda x: dnp.concatenate([dnp.reshape(dnp.sum(x), (1,)), dnp.sin(x)]))
    assert one_row.plan(x).mode == "reverse" and one_row.plan(x).colors == 2
    assert dk.sparse_jacobian(lambda x: dnp.sum(x) * x).plan(x).mode == "forward"


def test_chained_rosenbrock_hessian_star_colouring():
    h = dk.sparse_hessian(chained_rosenbrock)
    big = np.linspace(-1.2, 1.0, 10 ** 4)
    assert h.plan(big).colors <= 3
    x = np.linspace(-1.2, 1.0, 40)
    assert np.allclose(h(x).toarray(), dk.hessian(chained_rosenbrock)(x), rtol=1e-13, atol=1e-12)
    assert np.allclose(h(x).toarray(), _dense_fd(dk.grad(chained_rosenbrock), x), atol=1e-5)
    assert np.allclose(dk.sparse_hessian(chained_rosenbrock, backend="numeric")(x).toarray(),
                       h(x).toarray(), atol=1e-5)


def test_plans_are_kept_per_shape():
    jac = dk.sparse_jacobian(broyden)
    first = jac.plan(np.ones(10))
    assert jac.plan(np.zeros(10)) is first and jac.plan(np.ones(11)) is not first


def test_mistakes_are_one_line():
    with pytest.raises(dk.DiffkitError, match="unknown mode"):
        dk.sparse_jacobian(broyden, mode="sideways")
    with pytest.raises(dk.DiffkitError, match="numeric"):
        dk.sparse_jacobian(broyden, mode="cpr", backend="forward")
    with pytest.raises(dk.DiffkitError, match="colouring order"):
        dk.sparse_jacobian(broyden, order="random")(np.ones(4))
    with pytest.raises(dk.DiffkitError, match="scalar"):
        dk.hessian_sparsity(dnp.sin)(np.ones(3))
