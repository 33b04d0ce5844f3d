"""einsum's implementation takes a plain two-operand contraction through one tensordot (a
BLAS product and a transpose) and everything else through numpy's einsum: both give numpy's
own einsum's values, for real and complex operands, whatever the output's axis order."""

import numpy as np
import pytest

from diffkit.primitives.contraction import _einsum, _pairwise

CASES = {  # subscripts: operand shapes, and whether they are one plain contraction
    "ij,jk->ik": ([(3, 4), (4, 5)], True),
    "ij,jk->ki": ([(3, 4), (4, 5)], True),
    "nchwij,ocij->nohw": ([(2, 1, 4, 4, 3, 3), (5, 1, 3, 3)], True),  # a convolution
    "nohw,nchwij->ocij": ([(2, 5, 4, 4), (2, 1, 4, 4, 3, 3)], True),  # its kernels' adjoint
    "i,i->": ([(4,), (4,)], True),
    "i,j->ji": ([(3,), (2,)], True),
    ",i->i": ([(), (3,)], True),
    "ij,ij->i": ([(3, 4), (3, 4)], False),   # i shared and kept: a batch index
    "ii,i->i": ([(3, 3), (3,)], False),      # a diagonal
    "ij,jk->i": ([(3, 4), (4, 5)], False),   # k summed in one operand only
    "ij,jk->ik~": ([(3, 1), (4, 2)], True),  # plain, but j's size 1 broadcasts: numpy's
}


@pytest.mark.parametrize("subs", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_two_operand_einsum_equals_numpys(subs, dtype):
    shapes, plain = CASES[subs]
    subs = subs.rstrip("~")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) + (1j * rng.standard_normal(s) if dtype is np.complex128 else 0)
          for s in shapes]
    assert (_pairwise(subs) is not None) == plain
    got = _einsum(*xs, subs=subs)
    expected = np.einsum(subs, *xs, optimize=False)
    assert np.shape(got) == expected.shape and np.asarray(got).dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
