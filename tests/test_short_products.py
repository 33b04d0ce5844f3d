"""Matrix products with a short side are written out into kernels (``X @ W`` with few
inputs, ``Xᵀ @ G`` with few outputs): values against numpy's products and a hand-written
backpropagation, on both kernel routes, at the edges of the rule."""

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.bench import workloads as wl
from diffkit.compiler.short_products import SHORT, WIDE

pytestmark = pytest.mark.jit
needs("jit")


def _library_product(source: str) -> bool:
    """Does a program's driver call a library matrix product (``np.matmul`` or ``@``)?"""
    return "matmul" in source or " @ " in source


def _rng(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-5)])
@pytest.mark.parametrize("m, k, n", [(512, 20, 64), (13, 1, 9), (7, SHORT, WIDE), (3, 5, 100)])
def test_a_short_contraction_runs_in_kernels_and_equals_numpy(m, k, n, dtype, rtol):
    X, W, b = _rng(m, k).astype(dtype), _rng(k, n).astype(dtype), _rng(n).astype(dtype)
    f = dk.jit(lambda X, W, b: dnp.tanh(X @ W + b))
    out = f(X, W, b)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, np.tanh(X.astype(float) @ W.astype(float) + b), rtol=rtol,
                               atol=rtol)
    assert ", 0 library calls" in f.program(X, W, b).fusion


@pytest.mark.parametrize("m", [512, 13, 6, 1])  # rows by eight, one by one, two by two
def test_a_transposed_product_with_few_outputs_adds_rows_in_a_kernel(m):
    X, G = _rng(m, 24), _rng(m, 64)
    f = dk.jit(lambda X, G: X.T @ G)
    np.testing.assert_allclose(f(X, G), X.T @ G, rtol=1e-13, atol=1e-13)
    assert "over (" in f.program(X, G).fusion and not _library_product(f.program(X, G).source)


@pytest.mark.parametrize("shapes", [((5, SHORT + 1), (SHORT + 1, 8)),  # long contraction
                                    ((6, 4), (4, WIDE - 1)),           # narrow result
                                    ((SHORT + 1, 50), (50, 8))])      # Xᵀ @ G, many outputs
def test_products_outside_the_rule_stay_library_calls(shapes):
    A, B = _rng(*shapes[0]), _rng(*shapes[1])
    f = dk.jit(lambda A, B: dnp.sin(A @ B))
    np.testing.assert_allclose(f(A, B), np.sin(A @ B), rtol=1e-13)
    assert _library_product(f.program(A, B).source)


def test_a_computed_operand_is_written_once_not_recomputed_per_product_element():
    X, W = _rng(64, 16), _rng(16, 32)
    f = dk.jit(lambda X, W: dnp.sum(dnp.exp(dnp.sin(X) @ W)))
    np.testing.assert_allclose(f(X, W), np.sum(np.exp(np.sin(X) @ W)), rtol=1e-13)
    plan = f.program(X, W).fusion
    assert plan.startswith("3 kernels") and "-> v1 " in plan  # sin(X) written by its own loop


def _mlp_backprop(params: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """Value and gradient of :func:`wl.mlp_loss`, derived by hand, in numpy."""
    W1, b1, W2, b2 = params
    H = np.tanh(X @ W1 + b1)
    r = H @ W2 + b2 - y
    dr = 2.0 * r / len(y)
    dZ = np.outer(dr, W2) * (1.0 - H**2)
    return np.mean(r**2), (X.T @ dZ, dZ.sum(axis=0), H.T @ dr, dr.sum())


@pytest.mark.parametrize("backend", ["compiled", "compiled[parallel=true]"])
def test_the_mlp_step_with_its_products_written_out_is_the_hand_derived_gradient(backend):
    rng = np.random.default_rng(7)
    params, X, y = wl.mlp_params(rng), rng.standard_normal((512, 20)), rng.standard_normal(512)
    value, grads = dk.value_and_grad(wl.mlp_loss, backend=backend)(params, X, y)
    v_ref, g_ref = _mlp_backprop(params, X, y)
    assert value == pytest.approx(v_ref, rel=1e-13)
    for g, r in zip(grads, g_ref):
        np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-15)
    program = dk.jit(dk.value_and_grad(wl.mlp_loss)).program(params, X, y)
    assert not _library_product(program.source)


def test_the_unfused_program_keeps_the_library_products():
    X, W = _rng(32, 4), _rng(4, 16)
    f = dk.jit(lambda X, W: dnp.tanh(X @ W), fuse=False)
    np.testing.assert_allclose(f(X, W), np.tanh(X @ W), rtol=1e-15)
    assert _library_product(f.program(X, W).source)


def test_small_reused_inputs_are_copied_aligned_at_every_call():
    """The weights a kernel reads at every row go through an aligned copy made per call:
    a misaligned view in, and new values on the next call, give numpy's results."""
    X = _rng(2048, 8)  # 128 kB: larger than a copy is worth
    raw = _rng(8 * 32 + 1)
    W1, W2 = raw[1:].reshape(8, 32), 2.0 * raw[1:].reshape(8, 32)  # W1 is 8 bytes off
    f = dk.jit(lambda X, W: dnp.tanh(X @ W))
    for W in (W1, W2, W1):
        np.testing.assert_allclose(f(X, W), np.tanh(X @ W), rtol=1e-13, atol=1e-14)
    assert "np.copyto(_aligned_W, W)" in f.program(X, W1).source
    assert "_aligned_X" not in f.program(X, W1).source


EINSUMS = [  # (subscripts, shapes, written out)
    ("kij,nkj->nki", [(10, 2, 2), (300, 10, 2)], True),    # gmm's: j of 2, a term per value
    ("nki,nkj->kij", [(300, 10, 2), (300, 10, 2)], True),  # its adjoint: summed over long n
    ("nki,kij->nkj", [(300, 10, 2), (10, 2, 2)], True),
    ("bij,bjk->bik", [(20, 3, 4), (20, 4, 5)], True),      # batched, every index short
    ("i,i->", [(100,), (100,)], True),
    ("ij,jk->ik", [(50, 3), (3, 40)], False),              # two long indices: the library's
    ("ij,ji->i", [(5, 5), (5, 5)], False),                 # a transpose on one side
    ("ii,i->i", [(4, 4), (4,)], False),                    # a diagonal
    ("nchwij,ocij->nohw", [(64, 1, 6, 6, 3, 3), (8, 1, 3, 3)], False),  # a CNN's: products
]                                                          # 8x the operands (SPREAD = 2)


@pytest.mark.parametrize("subs, shapes, written", EINSUMS, ids=[c[0] for c in EINSUMS])
def test_an_einsum_of_short_indices_is_written_out_and_equals_numpy(subs, shapes, written):
    """Value against numpy's einsum, gradients against the einsums of the other operand
    (einsum is linear in each), and whether the driver still calls the library."""
    A, B = _rng(*shapes[0]), _rng(*shapes[1])
    f = dk.jit(lambda A, B: dnp.sum(dnp.sin(dnp.einsum(subs, A, B))))
    np.testing.assert_allclose(f(A, B), np.sum(np.sin(np.einsum(subs, A, B))), rtol=1e-12,
                               atol=1e-12)  # (sums in another order)
    g = dk.jit(dk.grad(lambda A, B: dnp.sum(dnp.einsum(subs, A, B) * dnp.einsum(subs, A, B)),
                       argnums=(0, 1)))
    Y = 2.0 * np.einsum(subs, A, B)
    ins, out = subs.split("->")
    a, b = ins.split(",")
    gA = np.einsum(f"{out},{b}->{a}", Y, B) if a.count(a[0]) == 1 and len(set(a)) == len(a) \
        else None
    got = g(A, B)
    if gA is not None:
        np.testing.assert_allclose(got[0], gA, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], np.einsum(f"{a},{out}->{b}", A, Y), rtol=1e-12,
                                   atol=1e-12)
    assert ("einsum(" not in f.program(A, B).source) == written
