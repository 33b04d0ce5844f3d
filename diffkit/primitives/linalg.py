"""Linear algebra: the matrix product ``z = x @ y``, and inv, det, log|det|, solve,
cholesky and eigh of numpy.linalg (their conditions: see :mod:`diffkit.nplib.linalg`).

The matrix product works on operands of at least two dimensions:
``diffkit.numpy.matmul`` promotes vectors to matrices before calling it, so the rules
need only the matrix case; leading (batch) axes broadcast as in numpy, and the
interpreters sum the adjoint back over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DiffkitError, NotApplicable, Primitive, ndim, primal, shape
from .contraction import einsum
from .reductions import sum_to
from .elementwise import conj, is_complex, real, where
from .lowering import LibraryCall
from . import patterns, series
from .structure import align, concatenate, getitem, reshape, transpose


def _mT(a: Any) -> Any:
    """Swap the last two axes."""
    n = ndim(a)
    return transpose(a, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _cj(a: Any) -> Any:
    """The complex conjugate of a complex ``a``; a real ``a`` as it is (no extra step)."""
    return conj(a) if is_complex(a) else a


def _mH(a: Any) -> Any:
    """The conjugate transpose (the transpose of a real matrix)."""
    return _mT(_cj(a))


# The factorizations (cholesky, eigh, svd, qr) of complex matrices are not holomorphic.
# Their JVPs are written with conjugate transposes; their VJPs are the usual adjoint for
# the real inner product Re sum(conj(a) b) (PyTorch's convention), taken between two
# conjugations: JAX's VJP of u is conj(adjoint(conj(u))) (see docs/complex.md). For real
# matrices every conjugation is skipped and the rules are the real ones.


def _matmul(x: Any, y: Any) -> Any:
    """``x @ y``; a stack against one matrix is done as ONE matrix product (numpy would
    loop over the stack): this is what makes batched forward-mode Jacobians fast."""
    if type(x) is np.ndarray and type(y) is np.ndarray:
        if x.ndim > 2 and y.ndim == 2:
            rows = int(np.prod(x.shape[:-1]))  # (not -1: a zero-size stack has no inferable size)
            return (x.reshape(rows, x.shape[-1]) @ y).reshape(x.shape[:-1] + y.shape[-1:])
        if x.ndim == 2 and y.ndim > 2:
            ys = np.moveaxis(y, -2, 0)  # (k, ..., m)
            out = x @ ys.reshape(ys.shape[0], int(np.prod(ys.shape[1:])))
            return np.moveaxis(out.reshape((x.shape[0],) + ys.shape[1:]), 0, -2)
    return x @ y


matmul = Primitive(
    "matmul", _matmul,
    jvp=(lambda x_dot, z, x, y: matmul(x_dot, y), lambda y_dot, z, x, y: matmul(x, y_dot)),
    vjp=(lambda z_bar, z, x, y: matmul(z_bar, _mT(y)), lambda z_bar, z, x, y: matmul(_mT(x), z_bar)),
    saves=("y", "x"), broadcasts=True,  # symbolic: numpy matmul works on object arrays of expressions,
    library=LibraryCall("{0} @ {1}", when=lambda x, y: len(x) == len(y) == 2),
    kind="contraction",
    sparsity=patterns.matmul,
    taylor=series.bilinear,
    complex=True,
)


# --------------------------------------------------------------------------- numpy.linalg
# All act on the last two axes (stacks of matrices, so the default batching rule fits).
# cholesky and eigh read only the lower triangle of their argument, as numpy does: their
# rules first form the symmetric matrix that triangle stands for (``_from_lower``), so
# the derivative with respect to the upper entries is zero, matching finite differences
# of numpy; JAX instead symmetrizes the tangent (equal on symmetric inputs and directions).


def _per_matrix(build: Any) -> Any:
    """A sympy translation from ``build(sp, *matrices)``, applied to each trailing matrix
    of object arrays (leading axes broadcast)."""
    def translate(sp: Any, *xs: Any) -> Any:
        xs = [np.asarray(x, dtype=object) for x in xs]
        lead = np.broadcast_shapes(*(x.shape[:-2] for x in xs))
        stacks = [np.broadcast_to(x, lead + x.shape[-2:]).reshape((-1,) + x.shape[-2:]) for x in xs]
        outs = [build(sp, *(sp.Matrix(m[k]) for m in stacks)) for k in range(len(stacks[0]))]
        outs = [np.array(o.tolist(), dtype=object) if isinstance(o, sp.MatrixBase) else o
                for o in outs]
        out = np.empty((len(outs),) + np.shape(outs[0]), dtype=object)
        for k, o in enumerate(outs):
            out[k] = o
        return out.reshape(lead + np.shape(outs[0]))
    return translate


def _refuse(name: str, why: str = "") -> Any:
    """The sympy translation of a function with no closed form: a clear error (a "n/a" cell)."""
    def refuse(sp: Any, *xs: Any) -> Any:
        raise NotApplicable(f"the symbolic backend needs a closed form, but {name} has no "
                           f"closed form here{why}; use another backend")
    return refuse


def _diag_embed(v: Any) -> Any:
    """Vectors (..., n) to diagonal matrices (..., n, n)."""
    n = ndim(v)
    return einsum(v, np.eye(shape(v)[-1]), subs="...i,ij->...ij".replace("...", "ZYXW"[:n - 1]))


inv = Primitive(
    "inv", np.linalg.inv,
    jvp=(lambda x_dot, y, x: -matmul(y, matmul(x_dot, y)),),
    vjp=(lambda y_bar, y, x: -matmul(_mT(y), matmul(y_bar, _mT(y))),),
    saves=("y",),
    sympy=_per_matrix(lambda sp, m: m.inv()),
    array_api=lambda xp, x: xp.linalg.inv(x),
    complex=True,
)


def _scale(c: Any, m: Any) -> Any:
    """Scalars (...) times matrices (..., n, m)."""
    return reshape(c, shape=shape(c) + (1, 1)) * m


# The adjugate, adj(x) = det(x) x^-1 where x is invertible, from the SVD so that it exists
# at singular matrices too: the gradient of det, d det(x) = tr(adj(x) x_dot).


def _adjugate(a: np.ndarray) -> np.ndarray:
    """adj(U S Vᴴ) = det(U) det(Vᴴ) V adj(S) Uᴴ, adj(S) holding the products of the others
    (ᴴ: the conjugate transpose, the transpose for real matrices)."""
    u, s, vt = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.prod(np.where(np.eye(n, dtype=bool), 1.0, s[..., None, :]), axis=-1)
    sign = np.linalg.det(u) * np.linalg.det(vt)
    return sign[..., None, None] * (np.conj(np.swapaxes(vt, -1, -2)) @ (
        others[..., :, None] * np.conj(np.swapaxes(u, -1, -2))))


def _invertible(a: Any) -> Any:
    d = det(a)
    value = primal(d)
    if not getattr(value, "abstract", False) and np.any(value == 0):  # (a traced graph: no values)
        raise DiffkitError("the second derivative of det (the derivative of the adjugate) at "
                           "a singular matrix is not supported; evaluate it at an invertible one")
    return d


def _adjugate_jvp(a_dot: Any, y: Any, a: Any) -> Any:
    """d adj = (tr(adj dA) adj - adj dA adj) / det, where det(A) != 0."""
    lead = "ZYXW"[:len(shape(a)) - 2]
    trace = einsum(y, a_dot, subs=f"{lead}ij,{lead}ji->{lead}")
    return _scale(1.0 / _invertible(a), _scale(trace, y) - matmul(y, matmul(a_dot, y)))


def _adjugate_vjp(y_bar: Any, y: Any, a: Any) -> Any:
    """The adjoint of the JVP: (<y_bar, adj> adjᵀ - adjᵀ y_bar adjᵀ) / det."""
    lead = "ZYXW"[:len(shape(a)) - 2]
    yt = _mT(y)
    inner = einsum(y_bar, y, subs=f"{lead}ij,{lead}ij->{lead}")
    return _scale(1.0 / _invertible(a), _scale(inner, yt) - matmul(yt, matmul(y_bar, yt)))


adjugate = Primitive(
    "adjugate", _adjugate,
    jvp=(_adjugate_jvp,),
    vjp=(_adjugate_vjp,),
    saves=("y a",),
    sympy=_per_matrix(lambda sp, m: m.adjugate()),
    complex=True,
)


det = Primitive(  # d det(x) = tr(adj(x) x_dot), adj(x) = det(x) x^-1 where x is invertible
    "det", np.linalg.det,
    jvp=(lambda x_dot, y, x: _trace(matmul(adjugate(x), x_dot)),),
    vjp=(lambda y_bar, y, x: _scale(y_bar, _mT(adjugate(x))),),
    saves=("x",),
    sympy=_per_matrix(lambda sp, m: m.det()),
    array_api=lambda xp, x: xp.linalg.det(x),
    complex=True,
)
logabsdet = Primitive(  # log |det x|, the second half of numpy's slogdet
    "logabsdet", lambda x: np.linalg.slogdet(x)[1],
    jvp=(lambda x_dot, y, x: real_part(x, _trace(matmul(inv(x), x_dot))),),  # (Re for complex x)
    vjp=(lambda y_bar, y, x: _scale(y_bar, _mT(inv(x))),),
    saves=("x",),
    sympy=_per_matrix(lambda sp, m: sp.log(sp.Abs(m.det()))),
    array_api=lambda xp, x: xp.linalg.slogdet(x)[1],
    complex=True,
)


def real_part(x: Any, v: Any) -> Any:
    """``Re v`` where ``x`` is complex (a real function of a complex matrix), else ``v``."""
    return real(v) if is_complex(x) else v


def _trace(m: Any) -> Any:
    lead = "ZYXW"[:ndim(m) - 2]
    return einsum(m, subs=f"{lead}ii->{lead}")


solve = Primitive(  # a y = b, b a stack of matrices (diffkit.numpy promotes a vector b)
    "solve", np.linalg.solve,
    jvp=(lambda a_dot, y, a, b: -solve(a, matmul(a_dot, y)),
         lambda b_dot, y, a, b: solve(a, b_dot)),
    vjp=(lambda y_bar, y, a, b: sum_to(-matmul(solve(_mT(a), y_bar), _mT(y)), shape(a)),
         lambda y_bar, y, a, b: sum_to(solve(_mT(a), y_bar), shape(b))),  # (leading axes broadcast)
    saves=("y a", "a b"),
    batch=lambda args, batched, size: solve(*align(args, batched, size)),
    sympy=_per_matrix(lambda sp, a, b: a.LUsolve(b)),
    array_api=lambda xp, a, b: xp.linalg.solve(a, b),
    complex=True,
)


def _lower(n: int, diagonal: float) -> np.ndarray:
    """1 below the diagonal, ``diagonal`` on it, 0 above."""
    return np.tril(np.ones((n, n)), -1) + diagonal * np.eye(n)


def _from_lower(x_dot: Any) -> Any:
    """The symmetric (Hermitian) matrix that the lower triangle of ``x_dot`` stands for
    (LAPACK reads the real part of a complex diagonal)."""
    n = shape(x_dot)[-1]
    if is_complex(x_dot):
        strict = x_dot * _lower(n, 0.0)
        return strict + _mH(strict) + real(x_dot) * np.eye(n)
    return x_dot * _lower(n, 1.0) + _mT(x_dot * _lower(n, 0.0))


def _to_lower(g: Any) -> Any:
    """The adjoint of :func:`_from_lower`: the upper triangle folded onto the lower."""
    n = shape(g)[-1]
    if is_complex(g):
        return (g + _mH(g)) * _lower(n, 0.0) + real(g) * np.eye(n)
    return g * _lower(n, 1.0) + _mT(g) * _lower(n, 0.0)


def _cholesky_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    l_inv = inv(y)
    return matmul(y, _lower(shape(y)[-1], 0.5) * matmul(l_inv, matmul(_from_lower(x_dot), _mH(l_inv))))


def _cholesky_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    l_inv = inv(y)
    middle = _lower(shape(y)[-1], 0.5) * matmul(_mH(y), _cj(y_bar))
    return _cj(_to_lower(matmul(_mH(l_inv), matmul(middle, l_inv))))


cholesky = Primitive(  # x = y y^T, y lower triangular; x symmetric positive definite
    "cholesky", np.linalg.cholesky,
    jvp=(_cholesky_jvp,), vjp=(_cholesky_vjp,), saves=("y",),
    sympy=_per_matrix(lambda sp, m: sp.Matrix(m.rows, m.cols, lambda i, j: m[max(i, j), min(i, j)])
                      .cholesky(hermitian=False)),
    array_api=lambda xp, x: xp.linalg.cholesky(x),
    complex=True,
)


def _eigh(x: Any) -> np.ndarray:
    w, v = np.linalg.eigh(x)  # (a complex x: the eigenvalues row is complex, its imaginary part 0)
    return np.concatenate([w[..., None, :], v], axis=-2)


def _eig_parts(y: Any) -> tuple[Any, Any, Any]:
    """Eigenvalues (..., n), eigenvectors (..., n, n) and F_ij = 1 / (w_j - w_i), 0 on the
    diagonal, from eigh's packed output."""
    w = getitem(y, idx=(Ellipsis, 0, slice(None)))
    v = getitem(y, idx=(Ellipsis, slice(1, None), slice(None)))
    n = shape(w)[-1]
    gaps = reshape(w, shape=shape(w)[:-1] + (1, n)) - reshape(w, shape=shape(w)[:-1] + (n, 1))
    diagonal = np.eye(n, dtype=bool)
    return w, v, where(0.0, 1.0 / where(1.0, gaps, cond=diagonal), cond=diagonal)


def _eigh_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    """(Hermitian x: the eigenvectors' phases move as JAX's, v^H v_dot has a zero diagonal.)"""
    w, v, f = _eig_parts(y)
    rotated = matmul(_mH(v), matmul(_from_lower(x_dot), v))
    w_dot = einsum(rotated, subs="...ii->...i".replace("...", "ZYXW"[:ndim(rotated) - 2]))
    v_dot = matmul(v, f * rotated)
    w_dot = real(w_dot) * (1.0 + 0j) if is_complex(w_dot) else w_dot
    return concatenate(reshape(w_dot, shape=shape(w_dot)[:-1] + (1, shape(w_dot)[-1])), v_dot,
                       axis=-2)


def _eigh_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    w, v, f = _eig_parts(y)
    w_bar = getitem(y_bar, idx=(Ellipsis, 0, slice(None)))
    v_bar = _cj(getitem(y_bar, idx=(Ellipsis, slice(1, None), slice(None))))
    if is_complex(y):  # (the eigenvalues are real: only the real part of w_bar pairs with them)
        w_bar, f = real(w_bar), real(f)
    middle = _diag_embed(w_bar) + f * matmul(_mH(v), v_bar)
    return _cj(_to_lower(matmul(v, matmul(middle, _mH(v)))))


eigh = Primitive(  # packed: row 0 the eigenvalues (ascending), rows 1.. the eigenvectors
    "eigh", _eigh, jvp=(_eigh_jvp,), vjp=(_eigh_vjp,), saves=("y",),
    sympy=_refuse("eigh", " (eigenvalues are roots of a polynomial)"),
    array_api=lambda xp, x: xp.concat([xp.linalg.eigh(x)[0][..., None, :], xp.linalg.eigh(x)[1]],
                                      axis=-2),
    complex=True,
)



# --------------------------------------------------------------------------- svd and qr
# Both pack their outputs into one array, as eigh does. The SVD is the reduced one,
# a = u diag(s) vh with k = min(m, n) singular values, which must be distinct and
# non-zero for the derivative (the rules divide by s_j^2 - s_i^2 and by s); the singular
# vectors are defined up to sign: the derivative is that of the vectors LAPACK returns.
# QR is the reduced one of a square or tall matrix (m >= n), r of full rank.


def _svd(x: Any) -> np.ndarray:
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.concatenate([np.swapaxes(u, -1, -2), s[..., None], vh], axis=-1)


def _svd_parts(y: Any, m: int) -> tuple[Any, Any, Any, Any]:
    """u (..., m, k), s (..., k), v (..., n, k) from the packed output, and
    F_ij = 1 / (s_j^2 - s_i^2), 0 on the diagonal."""
    u = _mT(getitem(y, idx=(Ellipsis, slice(0, m))))
    s = getitem(y, idx=(Ellipsis, m))
    v = _mH(getitem(y, idx=(Ellipsis, slice(m + 1, None))))
    s = real(s) if is_complex(s) else s  # (real singular values, of a complex dtype)
    k = shape(s)[-1]
    row = reshape(s * s, shape=shape(s)[:-1] + (1, k))
    diagonal = np.eye(k, dtype=bool)
    f = where(0.0, 1.0 / where(1.0, row - _mT(row), cond=diagonal), cond=diagonal)
    return u, s, v, f


def _rows(s: Any) -> Any:
    """A vector (..., k) as a row (..., 1, k): ``m * _rows(s)`` is ``m diag(s)``."""
    return reshape(s, shape=shape(s)[:-1] + (1, shape(s)[-1]))


def _cols(s: Any) -> Any:
    """A vector (..., k) as a column (..., k, 1): ``_cols(s) * m`` is ``diag(s) m``."""
    return reshape(s, shape=shape(s) + (1,))


def _diagonal(m: Any) -> Any:
    return einsum(m, subs="...ii->...i".replace("...", "ZYXW"[:ndim(m) - 2]))


def _phase(p: Any, s: Any) -> Any:
    """i Im(diag p) / s as a diagonal matrix: what moves the phases of u (JAX's choice;
    zero for real matrices)."""
    half = 0.5 * (p - _mH(p)) / _rows(s)
    return half * np.eye(shape(s)[-1])


def _svd_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    m, n = shape(x)[-2:]
    u, s, v, f = _svd_parts(y, m)
    p = matmul(_mH(u), matmul(x_dot, v))  # x_dot in the singular bases, (..., k, k)
    u_dot = matmul(u, f * (p * _rows(s) + _cols(s) * _mH(p)))
    v_dot = matmul(v, f * (_cols(s) * p + _mH(p) * _rows(s)))
    if is_complex(p):
        u_dot = u_dot + matmul(u, _phase(p, s))
    if m > n:  # the part of x_dot outside the span of u
        xv = matmul(x_dot, v)
        u_dot = u_dot + (xv - matmul(u, matmul(_mH(u), xv))) / _rows(s)
    if n > m:
        xu = matmul(_mH(x_dot), u)
        v_dot = v_dot + (xu - matmul(v, matmul(_mH(v), xu))) / _rows(s)
    s_dot = _diagonal(p)
    s_dot = real(s_dot) * (1.0 + 0j) if is_complex(s_dot) else s_dot
    return concatenate(_mT(u_dot), _cols(s_dot), _mH(v_dot), axis=-1)


def _svd_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    m, n = shape(x)[-2:]
    u, s, v, f = _svd_parts(y, m)
    y_bar = _cj(y_bar)
    u_bar = _mT(getitem(y_bar, idx=(Ellipsis, slice(0, m))))
    s_bar = getitem(y_bar, idx=(Ellipsis, m))
    v_bar = _mH(getitem(y_bar, idx=(Ellipsis, slice(m + 1, None))))
    s_bar = real(s_bar) if is_complex(s_bar) else s_bar
    uu, vv = matmul(_mH(u), u_bar), matmul(_mH(v), v_bar)
    middle = (_diag_embed(s_bar) + (f * (uu - _mH(uu))) * _rows(s)
              + _cols(s) * (f * (vv - _mH(vv))))
    if is_complex(uu):
        middle = middle + _phase(uu, s)
    x_bar = matmul(u, matmul(middle, _mH(v)))
    if m > n:
        outside = u_bar - matmul(u, uu)  # (1 - u u^H) u_bar
        x_bar = x_bar + matmul(outside / _rows(s), _mH(v))
    if n > m:
        outside = v_bar - matmul(v, vv)
        x_bar = x_bar + matmul(u / _rows(s), _mH(outside))
    return _cj(x_bar)


svd = Primitive(  # packed: row j holds u[:, j], s_j and vh[j, :] (shape (..., k, m + 1 + n))
    "svd", _svd, jvp=(_svd_jvp,), vjp=(_svd_vjp,), saves=("y x",),
    sympy=_refuse("svd", " (singular values are roots of a polynomial)"),
    array_api=lambda xp, x: _svd_api(xp, *xp.linalg.svd(x, full_matrices=False)),
    complex=True,
)


def _svd_api(xp: Any, u: Any, s: Any, vh: Any) -> Any:
    """svd's packed output from another library's factors."""
    n = len(u.shape)
    return xp.concat([xp.permute_dims(u, tuple(range(n - 2)) + (n - 1, n - 2)), s[..., None], vh],
                     axis=-1)


def _qr(x: Any) -> np.ndarray:
    q, r = np.linalg.qr(x)
    return np.concatenate([q, r], axis=-2)


def _qr_parts(y: Any, m: int) -> tuple[Any, Any]:
    return getitem(y, idx=(Ellipsis, slice(0, m), slice(None))), \
        getitem(y, idx=(Ellipsis, slice(m, None), slice(None)))


def _strictly_lower(c: Any) -> Any:
    return c * _lower(shape(c)[-1], 0.0)


def _imaginary_diagonal(c: Any) -> Any:
    """i Im(diag c) as a diagonal matrix (LAPACK's r has a real diagonal: for complex
    matrices this part of q^H q_dot keeps it real)."""
    return (c - real(c)) * np.eye(shape(c)[-1])


def _qr_jvp(x_dot: Any, y: Any, x: Any) -> Any:
    q, r = _qr_parts(y, shape(x)[-2])
    b = matmul(x_dot, inv(r))  # x_dot r^-1
    c = matmul(_mH(q), b)
    omega = _strictly_lower(c) - _mH(_strictly_lower(c))  # q^H q_dot, skew-Hermitian
    if is_complex(c):
        omega = omega + _imaginary_diagonal(c)
    return concatenate(matmul(q, omega - c) + b, matmul(c - omega, r), axis=-2)


def _qr_vjp(y_bar: Any, y: Any, x: Any) -> Any:
    q, r = _qr_parts(y, shape(x)[-2])
    q_bar, r_bar = _qr_parts(_cj(y_bar), shape(x)[-2])
    m = matmul(r_bar, _mH(r)) - matmul(_mH(q), q_bar)
    g = m - _strictly_lower(m - _mH(m))
    if is_complex(m):
        g = g - _imaginary_diagonal(m)
    return _cj(matmul(matmul(q, g) + q_bar, _mH(inv(r))))


qr = Primitive(  # packed: q (..., m, n) on top of r (..., n, n); m >= n
    "qr", _qr, jvp=(_qr_jvp,), vjp=(_qr_vjp,), saves=("y x",),
    sympy=_refuse("qr", " (SymPy's Gram-Schmidt signs differ from LAPACK's)"),
    array_api=lambda xp, x: xp.concat(list(xp.linalg.qr(x)), axis=-2),
    complex=True,
)
