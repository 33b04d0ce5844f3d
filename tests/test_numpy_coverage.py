"""diffkit.numpy's coverage of numpy: every function of tests/jax_cases.py against numpy
and SciPy themselves (same values; forward-mode JVP == central differences of the numpy
function; reverse gradient == forward gradient; the adjoint identity), plus array
methods, building arrays from traced values, and what the namespace exports."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import needs, assert_close, central_jvp, inner
from jax_cases import CASES

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.core import DiffkitError, NotApplicable

import scipy.special as scipy_special
import diffkit.scipy.special as dsp  # noqa: E402


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_agrees_with_numpy_and_finite_differences(name: str) -> None:
    fn, sample = CASES[name]
    r = np.random.default_rng(3)
    x = sample(r)
    f = lambda v: fn(dnp, dsp, v)  # noqa: E731
    f_np = lambda v: fn(np, scipy_special, v)  # noqa: E731
    y = f(x)
    assert type(y) in (np.ndarray, np.float64)  # plain in, plain out
    assert_close(y, f_np(x), rtol=1e-13)
    v = r.standard_normal(np.shape(x))
    _, jv = dk.jvp(f, (x,), (v,))
    assert_close(jv, central_jvp(f_np, [x], [v]), rtol=1e-6)
    w = r.standard_normal(np.shape(y))
    g_rev = dk.grad(lambda z: dnp.sum(f(z) * w))(x)
    g_fwd = dk.grad(lambda z: dnp.sum(f(z) * w), backend="forward")(x)
    assert_close(g_rev, g_fwd, rtol=1e-12)
    assert_close(inner(g_rev, v), inner(w, jv), rtol=1e-11)


def test_numpy_calls_on_traced_values_dispatch_to_diffkit() -> None:
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    g = dk.grad(lambda x: np.linalg.det(x) + np.sum(np.einsum("ij,jk->ik", x, x))
                + np.var(x) + np.trace(x))(a)
    expected = (np.linalg.det(a) * np.linalg.inv(a).T + (a.sum(1)[None, :] + a.sum(0)[:, None])
                + 2 * (a - a.mean()) / 4 + np.eye(2))
    assert_close(g, expected, rtol=1e-13)


def test_array_methods_on_traced_values() -> None:
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])

    def f(z: Any) -> Any:
        total = z.copy().ravel().sum() + z.flatten()[1] + z[None].squeeze().prod()
        total = total + z.astype(np.float64).reshape(3, 2).T.max() + z.min() + z.mean()
        total = total + z.var() + z.std() + z.cumsum()[-2] + z.dot(z.T)[0, 1] + z.clip(-1, 1).sum()
        return total + z.cumprod(axis=1)[1, 2] + len(z) + sum(row[0] for row in z)

    def f_np(z: np.ndarray) -> Any:
        return (z.copy().ravel().sum() + z.flatten()[1] + z[None].squeeze().prod()
                + z.reshape(3, 2).T.max() + z.min() + z.mean() + z.var() + z.std()
                + z.cumsum()[-2] + z.dot(z.T)[0, 1] + z.clip(-1, 1).sum()
                + z.cumprod(axis=1)[1, 2] + len(z) + sum(row[0] for row in z))

    assert_close(f(x), f_np(x), rtol=1e-14)
    v = np.random.default_rng(0).standard_normal(x.shape)
    assert_close(inner(dk.grad(f)(x), v), central_jvp(f_np, [x], [v]), rtol=1e-6)
    assert dk.grad(lambda z: (z.shape, z.ndim, z.size, z.dtype) and z.sum())(x).shape == x.shape


def test_mod_floordiv_and_divmod_operators() -> None:
    x = np.array([2.3, -1.7, 5.2])
    assert_close(dk.grad(lambda z: dnp.sum(z % 0.7))(x), np.ones(3), rtol=0, atol=0)
    assert_close(dk.grad(lambda z: dnp.sum(5.0 % z))(x), -np.floor(5.0 / x), rtol=0, atol=0)
    assert_close(dk.grad(lambda z: dnp.sum(z // 0.7 + 1.0 // z))(x), np.zeros(3), rtol=0, atol=0)
    q, m = dk.jvp(lambda z: divmod(z, 0.7)[1], (x,), (np.ones(3),))
    assert_close(q, np.mod(x, 0.7), rtol=1e-15)
    assert_close(m, np.ones(3), rtol=0, atol=0)


def test_astype_to_int_is_a_clear_error() -> None:
    with pytest.raises(DiffkitError, match="only float dtypes"):
        dk.grad(lambda z: z.astype(int).sum())(np.ones(3))


def test_array_from_traced_scalars_and_arrays() -> None:
    def f(v: Any) -> Any:
        a, b, c = v[0], v[1], v[2]
        m = dnp.array([[a, b], [c, 1.0]])
        rows = dnp.array([v[:2], [2.0, 3.0], dnp.array([a * b, c])])
        return dnp.linalg.det(m) + dnp.sum(rows ** 2)

    v = np.array([1.5, -0.5, 2.0])
    a, b, c = v
    expected = np.array([1.0 + 2 * a + 2 * a * b * b, -c + 2 * b + 2 * a * a * b, -b + 2 * c])
    for backend in ("reverse", "forward"):
        assert_close(dk.grad(f, backend=backend)(v), expected, rtol=1e-14)
    assert dnp.array([0, 2, 2]).dtype.kind == "i"  # indices stay integer


def test_namespace_exports_only_functions_and_constants() -> None:
    public = set(dir(dnp))
    assert not public & {"Any", "Sequence", "annotations", "bind", "Box", "DiffkitError"}
    assert {"einsum", "linalg", "cumsum", "var", "pi", "inf", "tril", "roll"} <= public
    assert set(dnp.__all__) == public
    for name in dnp.__all__:
        assert hasattr(dnp, name), name


def test_norm_matches_numpy_for_each_order() -> None:
    x = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    for ord_ in (None, 1, 2, np.inf, -np.inf, 3):
        assert_close(dnp.linalg.norm(x[0], ord_), np.linalg.norm(x[0], ord_), rtol=1e-14)
    for ord_ in (None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"):
        assert_close(dnp.linalg.norm(x, ord_), np.linalg.norm(x, ord_), rtol=1e-14)
    assert_close(dnp.linalg.norm(x, axis=1, keepdims=True), np.linalg.norm(x, axis=1, keepdims=True),
                 rtol=1e-14)
    x3 = np.arange(24.0).reshape(2, 3, 4) ** 1.5
    for ord_ in (2, -2, "nuc"):
        assert_close(dnp.linalg.norm(x3, ord_, axis=(2, 0), keepdims=True),
                     np.linalg.norm(x3, ord_, axis=(2, 0), keepdims=True), rtol=1e-14)


def test_svd_and_qr_gradients_closed_forms_and_conditions() -> None:
    # d s_i / d a = u_i v_i^T; d ||a||_2 / d a = u_0 v_0^T; d ||a||_* / d a = u v^T (full rank)
    a = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, -1.0], [0.0, 1.0, 1.5], [2.0, 0.0, 1.0]])
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    for backend in ("reverse", "forward"):
        assert_close(dk.grad(lambda x: dnp.linalg.norm(x, 2), backend=backend)(a),
                     np.outer(u[:, 0], vh[0]), rtol=1e-13)
        assert_close(dk.grad(lambda x: dnp.linalg.norm(x, "nuc"), backend=backend)(a), u @ vh,
                     rtol=1e-13)
        assert_close(dk.grad(lambda x: dnp.linalg.svdvals(x)[2], backend=backend)(a),
                     np.outer(u[:, 2], vh[2]), rtol=1e-13)
    # plain values: numpy's own results (full_matrices=True by default, as numpy)
    for got, want in zip(dnp.linalg.svd(a) + dnp.linalg.qr(a), np.linalg.svd(a) + np.linalg.qr(a)):
        assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(DiffkitError, match="full_matrices=False"):
        dk.grad(lambda x: dnp.sum(dnp.linalg.svd(x)[0]))(a)
    with pytest.raises(DiffkitError, match="m >= n"):
        dk.grad(lambda x: dnp.sum(dnp.linalg.qr(x)[1]))(a.T)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues ±i: Re sum = trace
    assert_close(dk.grad(lambda x: dnp.real(dnp.sum(dnp.linalg.eigvals(x))))(rotation), np.eye(2))
    with pytest.raises(DiffkitError, match="repeated eigenvalue"):
        dk.grad(lambda x: dnp.real(dnp.sum(dnp.linalg.eigvals(x))))(np.eye(2))
    with pytest.raises(NotApplicable, match="svd has no closed form"):
        dk.grad(lambda x: dnp.linalg.norm(x, 2), backend="symbolic")(a)


def test_solve_gradient_closed_form() -> None:
    a = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -1.0])
    ga, gb = dk.grad(lambda a_, b_: dnp.sum(dnp.linalg.solve(a_, b_)), argnums=(0, 1))(a, b)
    lam = np.linalg.solve(a.T, np.ones(2))  # d sum(x) / d b = a^-T 1, / d a = -lam x^T
    assert_close(gb, lam, rtol=1e-14)
    assert_close(ga, -np.outer(lam, np.linalg.solve(a, b)), rtol=1e-14)


def test_unsupported_modes_are_clear_errors() -> None:
    with pytest.raises(DiffkitError, match="mode='constant'"):
        dnp.pad(np.ones(3), 1, mode="reflect")
    with pytest.raises(DiffkitError, match="equal sections"):
        dnp.split(np.ones(5), 2)
    with pytest.raises(DiffkitError, match="square"):
        dnp.linalg.inv(np.ones((2, 3)))


@pytest.mark.parametrize("f, name", [(lambda x: np.sort_complex(x), "numpy.sort_complex()"),
                                     (lambda x: np.bitwise_and(x, x), "numpy.bitwise_and"),
                                     (lambda x: np.add.reduce(x), "numpy.add.reduce")])
def test_a_numpy_function_diffkit_lacks_is_one_short_line(f: Any, name: str) -> None:
    with pytest.raises(DiffkitError) as info:
        dk.grad(lambda x: dnp.sum(f(x)))(np.ones(3))
    message = str(info.value)
    assert message.startswith(f"{name} does not support values being differentiated: "
                              f"diffkit.numpy has no {name.removeprefix('numpy.').rstrip('()')};")
    assert f"the {len(dnp.__all__)} functions of dir(diffkit.numpy)" in message
    assert "\n" not in message and len(message) < 200


VALUE_DEPENDENT = {"nan_to_num", "sort-partition"}  # need values a static graph does not have
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_backend_agrees_or_says_not_applicable(name: str) -> None:
    fn, sample = CASES[name]
    x = sample(np.random.default_rng(0))
    f = lambda v: fn(dnp, dsp, v)  # noqa: E731
    if name in VALUE_DEPENDENT:
        with pytest.raises(NotApplicable):
            dk.jacobian(f, backend="compiled")(x)
        return
    assert_close(dk.jacobian(f, backend="compiled")(x), *_independent_jacobian(fn, x))


def _extrapolated_jvp(f: Any, x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The directional derivative of plain-numpy ``f`` by the fourth-order central stencil at
    steps 1e-2 / 2^k, extrapolated once (Richardson, to sixth order); of the estimates, the
    one that changes least from the next: near a pole (gamma at -1 + 2e-3) no fixed step is
    both small enough and large enough."""
    d = [central_jvp(f, [x], [u], h=1e-2 / 2**k) for k in range(12)]
    r = [(16.0 * b - a) / 15.0 for a, b in zip(d, d[1:])]
    change = [float(np.max(np.abs(b - a))) for a, b in zip(r, r[1:])]
    return r[int(np.argmin(change)) + 1]


def _independent_jacobian(fn: Any, x: np.ndarray) -> tuple[np.ndarray, float]:
    """The Jacobian by JAX (x64) when installed, else central differences of numpy's own
    function (never diffkit's eager backends), and the tolerance that method allows."""
    try:
        import jax
    except ImportError:
        f_np = lambda v: np.asarray(fn(np, scipy_special, v))  # noqa: E731
        units = np.eye(x.size).reshape((x.size,) + x.shape)
        cols = [_extrapolated_jvp(f_np, x, u) for u in units]
        return np.moveaxis(np.asarray(cols), 0, -1).reshape(np.shape(f_np(x)) + x.shape), 1e-6
    jax.config.update("jax_enable_x64", True)
    jnp, jsp = needs("jax", "jax.numpy"), needs("jax", "jax.scipy.special")
    return np.asarray(jax.jacfwd(lambda v: fn(jnp, jsp, v))(jnp.asarray(x))), 1e-9


def test_compiled_gradient_through_fft() -> None:
    """Complex intermediates carry adjoints in the compiled reverse pass too; a complex
    constant is a literal of the graph; a real input gets a real adjoint."""
    x = np.array([1.0, 2.0, 0.5, -1.0])

    def f(v: Any) -> Any:
        return dnp.sum(dnp.abs(dnp.fft.fft(v * (1 + 2j))))

    # |fft(v (1+2i))| = sqrt(5) |fft(v)|; d sum_k |F_k| / dv_n = Re sum_k conj(F_k)/|F_k|
    # e^(-2 pi i k n / N) = Re(N ifft(F / |F|))_n
    spectrum = np.fft.fft(x)
    expected = np.sqrt(5) * np.real(len(x) * np.fft.ifft(spectrum / np.abs(spectrum)))
    assert_close(dk.grad(f, backend="compiled")(x), expected, rtol=1e-12)
    assert dk.grad(f, backend="compiled")(x).dtype == np.float64
    scalar = dk.grad(lambda t: dnp.real(t * (1 + 2j)) * t, backend="compiled")(0.5)
    assert scalar == 1.0  # d/dt t^2 = 2t


def test_complex_values_from_the_fft() -> None:
    x = np.array([1.0, 2.0, 0.5, -1.0, 0.25])
    spectrum = np.fft.fft(x)
    for name in ("fft", "ifft", "rfft", "fft2", "rfftn"):  # plain values: numpy's own
        arg = x[None] if name in ("fft2", "rfftn") else x
        assert_close(getattr(dnp.fft, name)(arg), getattr(np.fft, name)(arg), rtol=0, atol=0)
    assert_close(dnp.fft.irfft(spectrum[:3], n=5), np.fft.irfft(spectrum[:3], n=5), rtol=0, atol=0)

    def parts(v: Any) -> Any:  # every way to take a real value of a complex one
        f = dnp.fft.fft(v)
        return dnp.stack([dnp.real(f), dnp.imag(f), f.real, f.imag, abs(f), dnp.abs(f),
                          np.abs(f), dnp.angle(f[1:2])[0] + 0.0 * v, dnp.real(f.conj() * f),
                          dnp.real(np.conjugate(f))])

    s = spectrum
    expected = [s.real, s.imag, s.real, s.imag, abs(s), abs(s), abs(s),
                np.full(5, np.angle(s[1])), abs(s) ** 2, s.real]
    assert_close(parts(x), np.stack(expected), rtol=1e-14)
    # d|F_k|/dx_n = Re(conj(F_k) e^{-2 pi i k n / N}) / |F_k|; the other rows by the chain rule
    k, n = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    dft = np.exp(-2j * np.pi * k * n / 5)
    d_abs = np.real(np.conj(s)[:, None] * dft) / abs(s)[:, None]
    for backend in ("reverse", "forward"):
        jac = dk.jacobian(parts, backend=backend)(x)
        assert_close(jac[0], dft.real, rtol=1e-13)
        assert_close(jac[1], dft.imag, rtol=1e-13)
        assert_close(jac[4], d_abs, rtol=1e-13)
        assert_close(jac[8], 2 * abs(s)[:, None] * d_abs, rtol=1e-13)
    # JAX's convention: grad of a real loss of a real input through complex values is real
    g = dk.grad(lambda v: dnp.sum(dnp.abs(v * (1.0 + 2.0j))))(x)
    assert g.dtype == np.float64
    assert_close(g, np.sqrt(5.0) * np.sign(x), rtol=1e-15)


def test_complex_mistakes_are_clear_errors() -> None:
    x = np.array([1.0, 2.0, 0.5, -1.0])
    with pytest.raises(DiffkitError, match="grad requires real-valued outputs"):
        dk.grad(lambda v: dnp.sum(dnp.fft.fft(v)))(x)
    with pytest.raises(DiffkitError, match="jacrev requires real-valued outputs"):
        dk.jacobian(dnp.fft.fft, backend="reverse")(x)
    assert_close(dk.jacobian(dnp.fft.fft, backend="forward")(x), np.fft.fft(np.eye(4)), rtol=1e-15)
    with pytest.raises(DiffkitError, match="needs a real input"):
        dk.grad(lambda v: dnp.sum(dnp.fft.irfft(dnp.fft.rfft(dnp.fft.fft(v)))))(x)
    with pytest.raises(DiffkitError, match="norm='half'"):
        dk.grad(lambda v: dnp.sum(dnp.abs(dnp.fft.fft(v, norm="half"))))(x)
    # dnp.where(cond) with one argument: numpy's nonzero, named in the error
    with pytest.raises(DiffkitError, match="dnp.nonzero"):
        dk.grad(lambda v: dnp.sum(v[dnp.where(v > 0)]))(x)
    assert_close(dk.grad(lambda v: dnp.sum(v[dnp.nonzero(v > 0.75)]))(x), [1.0, 1.0, 0.0, 0.0],
                 rtol=0, atol=0)


def test_r_and_c_concatenate_values_being_differentiated() -> None:
    c = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    for joined, axis in ((lambda v: dnp.r_[v, c, v], 0), (lambda v: dnp.c_[v, c, v], 1)):
        assert_close(joined(x), np.concatenate([x, c, x], axis=axis), rtol=0, atol=0)
        w = np.arange(12.0).reshape(joined(x).shape)
        g = dk.grad(lambda v: dnp.sum(joined(v) * w))(x)
        parts = np.split(w, 3, axis=axis)
        assert_close(g, parts[0] + parts[2], rtol=0, atol=0)
    assert_close(dnp.r_[np.array([1.0]), 2.0, 3:5], [1.0, 2.0, 3.0, 4.0], rtol=0, atol=0)
    assert_close(dk.grad(lambda v: dnp.sum(dnp.r_[v, 1:3] ** 2))(np.array([1.5])), [3.0], rtol=0)
