"""Fused kernels lowered straight to LLVM IR: the same numbers as the Numba kernel and the
unfused numpy program, the fallback to Numba, and the disk cache across processes.

References are plain numpy (the unfused program's arithmetic, written out here where
the closed form is short) and eager reverse mode; the LLVM route is forced off by
replacing :func:`diffkit.compiler.driver.lower` to get the Numba kernel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import assert_close
from hypothesis import HealthCheck, assume, given, settings

import diffkit as dk
import diffkit.numpy as dnp
import strategies as S
from diffkit.compiler import driver, fusion, kernel_cache, llvm_kernels

pytestmark = pytest.mark.jit


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Kernels of these tests go to a private cache folder, not the user's."""
    monkeypatch.setenv("DIFFKIT_CACHE", str(tmp_path_factory.getbasetemp() / "diffkit-cache"))


def rosenbrock(x):
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(w, X, y):
    return dnp.mean(dnp.log(1.0 + dnp.exp(-y * (X @ w))))


def routes(fun, *args, monkeypatch):
    """``fun(*args)`` compiled fused through LLVM, fused through Numba, and unfused; the
    LLVM build's fusion report."""
    llvm = dk.jit(fun, fuse=True)
    out = llvm(*args)
    report = llvm.program(*args).fusion
    with monkeypatch.context() as m:
        m.setattr(driver, "lower", lambda *a, **k: None)
        numba = dk.jit(fun, fuse=True)
        out_numba = numba(*args)
        assert "[llvm]" not in numba.program(*args).fusion
    return out, out_numba, dk.jit(fun)(*args), report


def test_rosenbrock_gradient_is_bitwise_the_unfused_program(monkeypatch):
    x = np.random.default_rng(0).uniform(-1.5, 1.5, 1001)
    g, g_numba, g_unfused, report = routes(lambda x: dk.grad(rosenbrock)(x), x,
                                           monkeypatch=monkeypatch)
    assert report == "1 kernel, 0 library calls: k0 = 14 ops over (1001,) -> v14 [llvm]"
    np.testing.assert_array_equal(g, g_unfused)  # same operations in the same order
    expected = np.zeros_like(x)
    expected[:-1] = -2.0 * (1.0 - x[:-1]) + -200.0 * (x[1:] - x[:-1] * x[:-1]) * (2.0 * x[:-1])
    expected[1:] += 200.0 * (x[1:] - x[:-1] * x[:-1])
    np.testing.assert_array_equal(g, expected)
    # numba's fastmath={'reassoc'} reassociates the products, a few ulps away
    np.testing.assert_allclose(g, g_numba, rtol=1e-13)


def test_logistic_loss_gradient_kernels_equal_numba_and_numpy(monkeypatch):
    rng = np.random.default_rng(1)
    w, X, y = rng.normal(size=7), rng.normal(size=(50, 7)), np.sign(rng.normal(size=50))
    g, g_numba, g_unfused, report = routes(lambda w: dk.grad(logistic_loss)(w, X, y), w,
                                           monkeypatch=monkeypatch)
    assert "[llvm]" in report and "[numba]" not in report
    np.testing.assert_allclose(g, g_unfused, rtol=1e-15, atol=1e-17)
    np.testing.assert_allclose(g, g_numba, rtol=1e-15, atol=1e-17)
    p = 1.0 / (1.0 + np.exp(y * (X @ w)))
    assert_close(g, -(X.T @ (y * p)) / 50, rtol=1e-14)


def test_a_two_dimensional_broadcast_kernel_with_a_fused_sum(monkeypatch):
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=9), rng.normal(size=6)

    def f(a, b):
        z = a[:, None] * b[None, :]
        return dnp.sum(dnp.tanh(z) + dnp.log1p(z * z)), dnp.exp(z) - b

    (s, m), (s_numba, m_numba), (s_unfused, m_unfused), report = routes(
        f, a, b, monkeypatch=monkeypatch)
    assert report.startswith("1 kernel, 0 library calls: k0 = ") and \
        report.endswith("over (9, 6) -> v10, sum->v8 [llvm]")
    z = a[:, None] * b[None, :]
    # vector_math's exp is within 1 ULP of libm's (Numba's); the subtraction rounds once more
    assert np.all(np.abs(m - m_numba) <= 2 * np.spacing(np.exp(z)))
    np.testing.assert_allclose(m, np.exp(z) - b, rtol=1e-15)
    np.testing.assert_allclose(m, m_unfused, rtol=1e-15)
    for total in (s_numba, s_unfused, np.sum(np.tanh(z) + np.log1p(z * z))):
        np.testing.assert_allclose(s, total, rtol=1e-14)  # the order of the sum differs


def test_a_kernel_over_whole_arrays_is_one_flat_loop_and_numpys_bits():
    from diffkit.compiler.fusion import fuse
    from diffkit.compiler.kernel_ir import build, flattened
    from diffkit.ir.tracer import trace_graph

    x = np.random.default_rng(4).normal(size=(3, 4, 5, 6))
    f = dk.jit(lambda x: x * x + 3.0 * x - x / 7.0)
    np.testing.assert_array_equal(f(x), x * x + 3.0 * x - x / 7.0)
    plan = fuse(trace_graph(lambda x: x * x + 3.0 * x, (x,)))
    assert flattened(build(plan, plan.kernels[0])).domain == (360,)
    text = llvm_kernels.kernel_llvm(flattened(build(plan, plan.kernels[0])), "k")
    assert text.count("phi i64") == 1  # one loop, not four
    biased = fuse(trace_graph(lambda x, b: x * b, (x, np.ones(6))))  # b[i3]: not the loop's index
    assert flattened(build(biased, biased.kernels[0])).domain == (3, 4, 5, 6)


def test_where_maximum_and_sign_keep_numpys_nan_and_inf(monkeypatch):
    x = np.array([-2.0, -0.0, 0.0, 0.5, np.nan, np.inf, -np.inf, 3.0])
    y = np.array([1.0, np.nan, -1.0, 0.5, 2.0, 0.0, 1.0, np.nan])

    def f(x, y):
        return (dnp.maximum(x, y), dnp.minimum(x, y), dnp.where(x > y, x * 2.0, y - 1.0),
                dnp.sign(x), dnp.log(dnp.abs(x)), dnp.sqrt(y) + 1.0, x != y)

    with np.errstate(all="ignore"):
        ours, by_numba, unfused, report = routes(f, x, y, monkeypatch=monkeypatch)
        expected = (np.maximum(x, y), np.minimum(x, y), np.where(x > y, x * 2.0, y - 1.0),
                    np.sign(x), np.log(np.abs(x)), np.sqrt(y) + 1.0, x != y)
    assert report.endswith("[llvm]")
    for mine, theirs, plain, want in zip(ours, by_numba, unfused, expected):
        np.testing.assert_array_equal(mine, want)  # NaN where numpy has NaN, inf, -inf
        np.testing.assert_array_equal(mine, theirs)
        np.testing.assert_array_equal(mine, plain)
        assert mine.dtype == want.dtype  # the mask x != y comes back as booleans
    assert ours[4][1] == -np.inf and np.signbit(ours[0][1]) == np.signbit(np.nan)


def test_float32_kernels_go_to_numba():
    f = dk.jit(lambda x: dnp.sin(x) * 2.0 + x, fuse=True)
    x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    out = f(x)
    assert out.dtype == np.float32 and f.program(x).fusion.endswith("[numba]")
    assert_close(out, np.sin(x) * np.float32(2.0) + x, rtol=2e-7)
    assert f.program(x.astype(np.float64)).fusion.endswith("[llvm]")


def test_the_route_is_decided_from_the_kernels_types():
    """A kernel's typed program goes to LLVM when its arrays are float64 or bool and it
    runs on one thread; float32 or integer arrays go to Numba (nothing is parsed)."""
    import math

    from diffkit.compiler.kernel_ir import Instr, KernelIR, Param

    def kernel(dtype):
        body = [Instr("load", "t1", ("a0", (("i", 0, 0),)), dtype),
                Instr("sin", "t2", ("t1",), dtype), Instr("store", None, ("o0", "t2"), dtype)]
        return KernelIR("k0", (3,), [Param("a0", "array", dtype, (3,)),
                                     Param("o0", "out", dtype, (3,))], body, 0, [])

    f64 = kernel(np.dtype(np.float64))
    assert llvm_kernels.llvm_route(f64)
    fn = llvm_kernels.lower(f64, kernel_cache.cache_dir())
    x, out = np.array([-1.5, 0.0, 2.25]), np.empty(3)
    fn(x, out)
    assert out.tolist() == [math.sin(v) for v in x]  # the C library's sin, as Numba's
    for dtype in (np.float32, np.int64):
        assert not llvm_kernels.llvm_route(kernel(np.dtype(dtype)))
        assert llvm_kernels.lower(kernel(np.dtype(dtype)), kernel_cache.cache_dir()) is None


def test_non_contiguous_arguments_are_copied_on_the_way_in():
    f = dk.jit(lambda x: dk.grad(rosenbrock)(x), fuse=True)
    base = np.random.default_rng(3).uniform(-1.0, 1.0, 40)
    assert_close(f(base[::2]), f(np.ascontiguousarray(base[::2])), rtol=0, atol=0)
    assert f.program(base[::2]).fusion.endswith("[llvm]")


MANY = 1500  # arrays read by one kernel: past the 1,024 arguments ctypes can pass


def weighted_total(xs):
    """Σ (k + 1) x_k, added in order: one kernel reading every x_k."""
    total = 0.0
    for k, x in enumerate(xs):
        total = total + x * (k + 1.0)
    return total


def many_arrays():
    xs = list(np.random.default_rng(12).uniform(-1.0, 1.0, (MANY, 40)))
    expected = 0.0
    for k, x in enumerate(xs):
        expected = expected + x * (k + 1.0)
    return xs, expected


def test_a_kernel_reads_any_number_of_arrays(monkeypatch):
    """1,500 arrays into one LLVM kernel (its arguments go as one tuple): numpy's
    arithmetic in numpy's order, to the bit. (A kernel is cut past KERNEL_OPS operations,
    for compile time; the limit is lifted here to reach the tuple's.)"""
    monkeypatch.setattr(fusion, "KERNEL_OPS", 10_000)
    xs, expected = many_arrays()
    f = dk.jit(weighted_total)
    total = f(xs)
    prog = f.program(xs)
    ops = 2 * MANY - 2  # a multiplication and an addition each (0.0 + x_0 * 1.0 is x_0)
    assert prog.fusion == f"1 kernel, 0 library calls: k0 = {ops} ops over (40,) -> v{ops} [llvm]"
    assert f"a{MANY - 1}, o0):" in prog.kernel_source  # (its Numba spelling)
    np.testing.assert_array_equal(total, expected)
    np.testing.assert_array_equal(total, dk.jit(weighted_total, fuse=False)(xs))


@pytest.mark.soak  # (Numba compiles 1,500 array reads in ~100 s)
def test_a_numba_kernel_reads_any_number_of_arrays(monkeypatch):
    """The same 1,500 arrays through Numba (its compile takes a minute: Numba's typing
    and lowering of each array access, not the arguments' count)."""
    monkeypatch.setattr(driver, "lower", lambda *a, **k: None)
    xs, expected = many_arrays()
    f = dk.jit(weighted_total)
    total = f(xs)
    assert f.program(xs).fusion.endswith("[numba]")
    assert_close(total, expected, rtol=1e-13)  # reassociated additions: a few ulps
    assert_close(total, dk.jit(weighted_total, fuse=False)(xs), rtol=1e-13)


def test_the_object_file_is_loaded_by_the_next_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, diffkit as dk, diffkit.numpy as dnp
        from diffkit.compiler import llvm_kernels
        f = dk.jit(lambda x: dk.grad(lambda x: dnp.sum(dnp.sin(x) * x))(x),
                   fuse=True)
        g = f(np.linspace(0.0, 1.0, 17))
        assert abs(g[3] - (np.sin(3 / 16) + 3 / 16 * np.cos(3 / 16))) < 1e-15
        print(llvm_kernels.STATS["compiled"], llvm_kernels.STATS["loaded"])
        """)
    env = {**os.environ, "DIFFKIT_CACHE": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    objects = list((tmp_path / "kernels").glob("dk_*.o"))
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    assert first == ["1", "0"] and len(objects) == 1
    assert second == ["0", "1"]  # loaded, not compiled


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(S.programs("grad", max_ops=5))
def test_random_fused_gradients_equal_the_reference(program):
    """Against the 40-digit reference (SymPy; no diffkit derivative rule), not eager AD."""
    from diffkit.bench.reference import reference

    f, x = program.function(), program.point()
    try:
        fused = dk.jit(lambda x: dk.grad(f)(x), fuse=True)
        g = fused(x)
    except dk.DiffkitError as exc:
        assume("traced array is needed" not in str(exc))
        raise
    expected = np.asarray(reference(f, x, "grad").derivative, dtype=float)
    assume(np.all(np.isfinite(expected)))
    assert_close(g, expected, rtol=1e-10)


def test_show_code_names_the_route_compile_plan_takes(capsys):
    from diffkit_cli.main import main

    from diffkit.compiler.fusion import fuse
    from diffkit.compiler.show import adjoint_program

    try:
        main(["show", "--code", "rosenbrock", "--dim", "7"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    assert ("fused (dk.jit(f, fuse=True)): 1 kernel, 0 library calls: k0 = 19 ops over (7,) "
            "-> x_bar, sum->v10 [llvm]") in out
    assert "k0(a0: f64[7], o0: f64[7] out) over (7,):" in out  # the kernel's typed program
    assert "    t5: f64 = load(a0, [i0 + 1])" in out and "  store(o0, t18)" in out
    for dtype, route in ((np.float64, "[llvm]"), (np.float32, "[numba]")):
        x = np.linspace(-1.0, 1.0, 7, dtype=dtype)
        predicted = driver.kernel_routes(fuse(adjoint_program(rosenbrock, (x,)).graph))
        f = dk.jit(lambda x: dk.grad(rosenbrock)(x), fuse=True)
        f(x)
        assert predicted.report().endswith(route) and f.program(x).fusion.endswith(route)


def test_kernel_routes_label_a_route_without_rendering_a_kernel(monkeypatch):
    from diffkit.compiler.fusion import fuse
    from diffkit.compiler.show import adjoint_program

    def refuse(*args, **kwargs):
        raise AssertionError("kernel_routes rendered a kernel")

    monkeypatch.setattr(llvm_kernels, "kernel_llvm", refuse)
    monkeypatch.setattr(driver, "numba_source", refuse)
    plan = driver.kernel_routes(fuse(adjoint_program(rosenbrock, (np.ones(7),)).graph))
    assert plan.report().endswith("[llvm]")
