"""Every primitive with complex rules, on complex inputs, against finite differences.

Generated from the primitive table: each primitive marked ``complex``
(:mod:`diffkit.primitives.complex_rules`) takes the cases of tests/test_primitives.py
with every float argument made complex (an imaginary part of up to 0.3, or a Hermitian
matrix where the primitive needs one), and

* its JVP (forward mode, each argument its own dual number) equals a 4th-order central
  difference of the numpy implementation in a real direction ``v`` and in the imaginary
  direction ``i v``;
* its VJP (``dk.vjp``, reverse mode) for a random cotangent ``u`` pairs with both
  directions as the finite differences do: ``Re sum(VJP(u) v) == Re sum(u (f(x + h v) -
  f(x - h v)) / 2h)`` (JAX's convention, no conjugation);
* with one complex and one real argument, the real one gets a real adjoint.

Every primitive not marked refuses a complex value being differentiated, in one line.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import central_jvp, forward_multi, inner
from test_primitives import CASES, Spec

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.primitives import table

SPECIAL_INPUTS = {"rfft"}  # (real signals only: its complex case is its output)


def _eigh_seen(y: Any, x: Any) -> Any:
    """The eigenvalues and V diag(1, 2, ...) V^H: what does not depend on the phases of the
    eigenvectors (LAPACK's phases are not the ones AD moves, as in JAX)."""
    v = y[..., 1:, :]
    c = np.arange(1.0, v.shape[-1] + 1.0)
    return dnp.concatenate([y[..., :1, :], dnp.matmul(v * c, dnp.conj(dnp.swapaxes(v, -1, -2)))],
                           axis=-2)


def _svd_seen(y: Any, x: Any) -> Any:
    """The singular values and U diag(1, 2, ...) V^H (phase-free, as for eigh)."""
    m = np.shape(x)[-2]
    u_rows, s, vh = y[..., :m], y[..., m:m + 1], y[..., m + 1:]
    c = np.arange(1.0, s.shape[-2] + 1.0)[:, None]
    return dnp.concatenate([dnp.reshape(s, (-1,)), dnp.reshape(
        dnp.matmul(dnp.swapaxes(u_rows, -1, -2), vh * c), (-1,))])


SEEN = {"eigh": _eigh_seen, "svd": _svd_seen}  # (complex matrices: phase-free views)


def complexify(r: np.random.Generator, name: str, spec: Spec, only: int | None = None) -> Spec:
    """The case with its differentiated float arguments made complex (argument ``only``
    alone when given)."""
    args = list(spec.args)
    for k in spec.diff:
        a = args[k]
        if only is not None and k != only or np.asarray(a).dtype.kind != "f":
            continue
        args[k] = a + 0.3j * r.uniform(-1.0, 1.0, np.shape(a))
    return Spec(args, dict(spec.params), spec.const)


def _cases(complex_: bool) -> list[Any]:
    out = []
    for name in sorted(table()):
        if table()[name].complex != complex_ or name not in CASES:
            continue
        for cid, make in CASES[name][:4]:
            out.append(pytest.param(name, make, id=f"{name}-{cid}"))
    return out


def _setup(name: str, make: Callable, only: int | None = None) -> tuple[Any, Spec, Any]:
    r = np.random.default_rng(zlib.crc32(name.encode()) + 7)
    spec = make(r)
    if name not in SPECIAL_INPUTS:
        spec = complexify(r, name, spec, only)
    return table()[name], spec, r


def _funs(prim: Any, spec: Spec) -> tuple[Callable, Callable]:
    seen = SEEN.get(prim.name, lambda y, x: y) if any(
        np.iscomplexobj(a) for a in spec.args) else (lambda y, x: y)

    def f(*dargs: Any) -> Any:
        return seen(prim(*spec.merge(dargs), **spec.params), spec.args[0])

    def f_np(*dargs: Any) -> Any:
        return seen(prim.impl(*spec.merge(dargs), **spec.params), spec.args[0])
    return f, f_np


def _direction(r: np.random.Generator, a: Any, imaginary: bool) -> Any:
    v = r.standard_normal(np.shape(a))
    if np.iscomplexobj(a):
        v = v * (1j if imaginary else 1.0 + 0j)
    return v


def _scale(*arrays: Any) -> float:
    return max([1.0] + [float(np.max(np.abs(a))) for a in arrays if np.size(a)])


def check_against_differences(prim: Any, spec: Spec, r: np.random.Generator) -> int:
    """JVP and VJP against central differences in real and imaginary directions; returns
    how many directions were judged."""
    f, f_np = _funs(prim, spec)
    dargs = [spec.args[i] for i in spec.diff]
    y_rev, pull = dk.vjp(f, *dargs)
    u = r.standard_normal(np.shape(y_rev))
    if np.iscomplexobj(y_rev):
        u = u + 1j * r.standard_normal(np.shape(y_rev))
    u_bars = pull(u)
    judged = 0
    for imaginary in (False, True):
        if imaginary and not any(np.iscomplexobj(a) for a in dargs):
            continue
        v = [_direction(r, a, imaginary) for a in dargs]
        fd = central_jvp(f_np, dargs, v)
        y, jv = forward_multi(f, dargs, v)
        tol = 1e-6 * _scale(fd)
        err = np.max(np.abs(np.asarray(jv) - fd), initial=0.0)
        assert err <= tol, \
            f"JVP ({'imaginary' if imaginary else 'real'} direction) off by {err:.2e}"
        lhs = sum(inner(g, vi) for g, vi in zip(u_bars, v))
        rhs = inner(u, fd)
        assert abs(lhs - rhs) <= 1e-6 * _scale(fd) * max(1.0, float(np.sum(np.abs(u)))), \
            f"VJP ({'imaginary' if imaginary else 'real'} direction): {lhs} != {rhs}"
        judged += 1
    for g, a in zip(u_bars, dargs):
        assert np.shape(g) == np.shape(a)
        assert np.iscomplexobj(g) == np.iscomplexobj(a), "a real input gets a real adjoint"
    return judged


@pytest.mark.parametrize("name,make", _cases(True))
def test_complex_rule_against_differences(name: str, make: Callable) -> None:
    prim, spec, r = _setup(name, make)
    assert check_against_differences(prim, spec, r) == (1 if name in SPECIAL_INPUTS else 2)


@pytest.mark.parametrize("name,make", [p for p in _cases(True) if len(p.values[1](
    np.random.default_rng(0)).diff) == 2])
def test_complex_and_real_arguments(name: str, make: Callable) -> None:
    """One complex argument, one real: the real one's adjoint is real."""
    prim, spec, r = _setup(name, make, only=0)
    assert check_against_differences(prim, spec, r) >= 1


@pytest.mark.parametrize("name,make", _cases(False))
def test_primitives_without_complex_rules_refuse(name: str, make: Callable) -> None:
    prim, spec, _ = _setup(name, make)
    dargs = [spec.args[i] for i in spec.diff]
    if not any(np.iscomplexobj(a) for a in dargs):
        pytest.skip("no float argument to make complex")
    f, _ = _funs(prim, spec)
    for run in (lambda: forward_multi(f, dargs, dargs), lambda: dk.vjp(f, *dargs)):
        with pytest.raises(dk.DiffkitError, match="no derivative rule for complex values") as info:
            run()
        assert "\n" not in str(info.value)


def test_the_table_marks_what_the_docs_list() -> None:
    marked = {n for n, p in table().items() if p.complex}
    assert {"mul", "exp", "sum", "matmul", "einsum", "fft", "abs", "real", "imag", "conj",
            "solve", "inv", "det"} <= marked
    assert not {"floor", "sign", "logsumexp", "rfft", "arctan2", "hypot"} & marked
