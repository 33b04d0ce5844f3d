"""Operator fusion: the fusion pass's kernels, numba's fused gradients, the no-numba path.

Fused gradients are checked against closed forms (Rosenbrock's), central differences of
plain numpy code, and the 40-digit reference on the random programs of ``strategies.py``;
float32 to float32's tolerance.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import warnings

import numpy as np
import pytest
from conftest import assert_close, central_diff
from hypothesis import HealthCheck, given, settings

import diffkit as dk
import diffkit.numpy as dnp
import strategies as S
from diffkit.backends import backend
from diffkit.compiler import driver, numba_kernels
from diffkit.compiler.formulas import CALL_WORK
from diffkit.compiler.fusion import KERNEL_OPS, RECOMPUTE_LIMIT, basic_index, fuse
from diffkit.compiler.passes import optimize
from diffkit.compiler.show import adjoint_program
from diffkit.bench import workloads as wl
from diffkit.gradbench import ode
from diffkit.ir.tracer import trace_graph

pytestmark = pytest.mark.fused  # (run again with numba's fused kernels: conftest.py)


@pytest.fixture(autouse=True)
def _kernel_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Kernels of these tests go to a private cache folder, not the user's."""
    monkeypatch.setenv("DIFFKIT_CACHE", str(tmp_path_factory.getbasetemp() / "diffkit-cache"))


def rosenbrock(x):
    return dnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def logistic_loss(w, X, y):
    return dnp.mean(dnp.log(1.0 + dnp.exp(-y * (X @ w))))


# ---------------------------------------------------------------- the fusion pass


def test_rosenbrock_gradient_is_one_kernel_in_gather_form():
    g = adjoint_program(rosenbrock, (np.ones(7),)).graph
    plan = fuse(g)
    assert plan.report() == "1 kernel, 0 library calls: k0 = 19 ops over (7,) -> x_bar, sum->v10"
    (k,) = plan.kernels
    assert k.domain == (7,) and [v.name for v in k.outputs] == [None] and len(k.reductions) == 1


def test_library_calls_split_kernels_into_stages():
    X = np.ones((6, 3))
    g = adjoint_program(lambda w: logistic_loss(w, X, np.ones(6)), (np.ones(3),)).graph
    plan = fuse(g)
    (k,) = plan.kernels
    assert k.domain == (6,) and k.ops == 9 and len(k.reductions) == 1
    assert {e.prim.name for e in plan.library} >= {"matmul"}
    # tanh(A @ sin(x)) @ B: elementwise before and after a matmul are two stages
    A, B = np.ones((4, 5)), np.ones((4,))
    g2 = adjoint_program(lambda x: dnp.sum(dnp.tanh(A @ dnp.sin(x)) * B), (np.ones(5),)).graph
    plan2 = fuse(g2)
    stages = [k.stage for k in plan2.kernels]
    assert len(plan2.kernels) == 3 and stages == sorted(stages) and len(set(stages)) == 3
    assert plan2.report().startswith("3 kernels, ")


def test_scalar_programs_have_no_kernels():
    g = adjoint_program(lambda a, b: dnp.log(a) + a * b - dnp.sin(b), (2.0, 5.0)).graph
    assert fuse(g).report() == "0 kernels, 10 library calls"


def test_basic_index_reads_slices_ints_and_new_axes():
    assert basic_index((slice(None, -1),), (10,)) == [("slice", 0, 9)]
    assert basic_index((None, 2, slice(1, 3)), (4, 5)) == [("new",), ("int", 2), ("slice", 1, 3)]
    assert basic_index((np.array([0, 1]),), (3,)) is None
    assert basic_index((slice(None, None, -1),), (3,)) is None


def test_a_value_two_stages_compute_is_written_once_when_recomputing_it_costs_more():
    """sin(sin(x)) (two C library calls: past RECOMPUTE_LIMIT) is computed by the stage
    before A @ ... and read after it; x * 3 (one multiplication) is computed again; a
    costly value only the later stage computes stays there."""
    A = np.ones((4, 4))

    def two_stages(inner):
        def f(x):
            u = inner(x)
            return dnp.sum(u * (A @ (u * 2.0)))
        return f

    def plan(f):
        return fuse(optimize(trace_graph(f, (np.ones(4),)))[0])

    first, second = plan(two_stages(lambda x: dnp.sin(dnp.sin(x)))).kernels
    assert (first.stage, len(first.outputs), first.ops) == (0, 2, 3)  # u * 2.0 and u
    assert second.stage > first.stage and second.ops == 2            # u read: mul, sum
    first, second = plan(two_stages(lambda x: x * 3.0)).kernels
    assert (len(first.outputs), first.ops, second.ops) == (1, 2, 3)    # u * 3 again
    (later,) = plan(lambda x: dnp.sum(dnp.sin(dnp.sin(x)) * (A @ x))).kernels
    assert later.ops == 4 and later.outputs == []
    assert 1 <= RECOMPUTE_LIMIT < 2 * CALL_WORK  # (the premise: x * 3 cheap, two sins not)


def test_a_costly_value_is_written_by_its_own_stages_loop_when_it_runs_anyway():
    """sin(sin(x)), needed only after A @ u, is computed and written by the loop that
    writes u (it runs anyway: one more store), not recomputed after the product."""
    A = np.ones((4, 4))

    def f(x):
        return dnp.sum(dnp.sin(dnp.sin(x)) * (A @ dnp.tanh(x)))

    first, later = fuse(optimize(trace_graph(f, (np.ones(4),)))[0]).kernels
    assert (len(first.outputs), later.ops) == (2, 2)  # tanh(x) and sin(sin(x)); mul, sum


@pytest.mark.jit
def test_the_mlps_tanh_derivative_is_written_by_the_forward_loop():
    """The MLP step's gradient kernels multiply and sum: tanh's derivative is computed and
    written by the loop that computes tanh (values against the backpropagation by hand)."""
    rng = np.random.default_rng(0)
    params, X, y = wl.mlp_params(rng, 20, 8), rng.standard_normal((16, 20)), np.ones(16)
    g = dk.jit(dk.value_and_grad(wl.mlp_loss))
    W1, b1, W2, b2 = params
    Z = np.tanh(X @ W1 + b1)
    r = 2.0 * (Z @ W2 + b2 - y) / 16
    dZ = np.outer(r, W2) * (1.0 - Z ** 2)
    value, grads = g(params, X, y)
    assert_close(value, np.mean((Z @ W2 + b2 - y) ** 2), 1e-14)
    for got, want in zip(grads, (X.T @ dZ, dZ.sum(axis=0), Z.T @ r, r.sum())):
        assert_close(got, want, 1e-13)
    plan = g.program(params, X, y).fusion
    loops = re.findall(r"= (\d+) ops over \(16, 8\) -> ([^\[]*)\[", plan)
    ops, writes = [int(n) for n, _ in loops], [w.count(",") + 1 for _, w in loops]
    assert ops[0] > 2 * 20 and writes[1] == 2, plan  # X @ W1; + b1, tanh and tanh' written
    assert max(ops[2:]) <= 4, plan  # the gradient's loops: products and sums, no exp


def recurrence(steps: int):
    """A loop-carried value that stays elementwise, with a library call in every step."""
    def f(y):
        for _ in range(steps):
            y = y + 0.1 * dnp.concatenate([y[:1], dnp.sin(y[1:]) * y[:-1]])
        return dnp.sum(y * y)
    return f


def kernel_ops(report: str) -> int:
    """The operations of every kernel in a fusion report (``k0 = 14 ops over ...``)."""
    return sum(int(n) for n in re.findall(r"= (\d+) ops over", report))


@pytest.mark.parametrize("program", [recurrence, lambda s: lambda x: ode.last(x, s)],
                         ids=["recurrence", "gradbench-ode"])
@pytest.mark.jit
def test_kernel_work_grows_linearly_with_a_loop_of_library_calls(program):
    """The state of step t is written once, not recomputed from the start by the kernels
    of every later step (ops(32) was 14.5x ops(8) for the recurrence, 8x for RK4)."""
    x = np.linspace(0.1, 0.7, 7)
    ops = {}
    for steps in (8, 32):
        g = dk.jit(dk.grad(program(steps)))
        g(x)
        ops[steps] = kernel_ops(g.program(x).fusion)
    assert ops[32] <= 4.5 * ops[8]


@pytest.mark.jit
def test_a_recurrence_written_once_keeps_its_gradient():
    f = recurrence(32)
    y0 = np.linspace(0.1, 0.7, 7)
    g = dk.jit(dk.grad(f))(y0)
    # (the fused sin may be another routine than numpy's: a few ulps, not bits)
    assert_close(g, dk.jit(dk.grad(f), fuse=False)(y0), rtol=1e-13)
    assert_close(g, central_diff(f, y0), rtol=1e-7)


# ---------------------------------------------------------------- fused numbers (numba)

FUSED = backend("compiled", fuse=True)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-13), (np.float32, 2e-6)])
@pytest.mark.parametrize("n", [2, 3, 1000])
@pytest.mark.jit
def test_fused_rosenbrock_gradient_is_the_closed_form(dtype, rtol, n):
    x = np.random.default_rng(n).uniform(-1.5, 1.5, n).astype(dtype)
    value, g = dk.value_and_grad(rosenbrock, backend=FUSED)(x)
    assert FUSED.last.kernel_source and "for i0 in range(" in FUSED.last.kernel_source
    assert g.dtype == dtype and np.asarray(value).dtype == dtype
    assert_close(g, rosenbrock_grad(x), rtol=rtol)
    x64 = x.astype(np.float64)
    assert_close(value, np.sum(100 * (x64[1:] - x64[:-1] ** 2) ** 2 + (1 - x64[:-1]) ** 2),
                 rtol=rtol)


@pytest.mark.jit
def test_gather_form_tests_where_the_slices_end_in_one_loop():
    dk.grad(rosenbrock, backend=FUSED)(np.ones(50))
    src = FUSED.last.kernel_source
    assert src.count("for i0 in") == 1 and "for i0 in range(50):" in src
    assert "if i0 < 49:" in src and "if i0 >= 1:" in src
    assert "a0[i0 - 1]" in src and "a0[i0 + 1]" in src and "np.empty" not in src


@pytest.mark.jit
def test_logistic_regression_gradient_against_the_closed_form():
    rng = np.random.default_rng(3)
    X, y, w = rng.normal(size=(40, 6)), np.sign(rng.normal(size=40)), rng.normal(size=6)
    g = dk.grad(lambda w: logistic_loss(w, X, y), backend=FUSED)(w)
    p = 1.0 / (1.0 + np.exp(y * (X @ w)))
    assert_close(g, -(X.T @ (y * p)) / 40, rtol=1e-14)
    assert "1 kernel" in FUSED.last.fusion


FUNCTIONS = {  # elementwise chains, broadcasts, masks, shifted slices, 2-D domains
    "sin_exp": (lambda x: dnp.sum(dnp.sin(x) * dnp.exp(0.3 * x)), (7,)),
    "sigmoid_tanh": (lambda x: dnp.sum(dnp.sigmoid(x) - dnp.tanh(x) ** 3), (6,)),
    "where": (lambda x: dnp.sum(dnp.where(x > 0.1, x ** 2, -x * 3.0)), (9,)),
    "second_difference": (lambda x: dnp.sum((x[2:] - 2.0 * x[1:-1] + x[:-2]) ** 2), (8,)),
    "neighbours": (lambda x: dnp.sum(dnp.tanh(x[1:] * x[:-1]) + dnp.cos(x[:-1])), (6,)),
    "abs_maximum": (lambda x: dnp.sum(dnp.maximum(x, 0.2) * dnp.abs(x) / (1.0 + x * x)), (8,)),
    "matrix_broadcast": (lambda x: dnp.sum(dnp.log1p(x ** 2) * dnp.sqrt(1.0 + x[0:1, :] ** 2)),
                         (4, 5)),
    "rows": (lambda x: dnp.sum(dnp.exp(x[1:, :] - x[:-1, :]) * x[:, 1:].sum()), (4, 3)),
    "mean_of_matmul": (lambda x: dnp.mean(dnp.sin(x @ x.T) * x[:, :1]), (3, 3)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.jit
def test_fused_gradients_match_central_differences(name):
    f, shape = FUNCTIONS[name]
    x = np.random.default_rng(len(name)).uniform(-1.0, 1.0, shape)
    g = dk.grad(f, backend=FUSED)(x)
    assert_close(g, central_diff(f, x), rtol=1e-7)
    assert_close(g, dk.grad(f, backend="reverse")(x), rtol=1e-13)


@pytest.mark.jit
def test_jit_fuses_forward_programs_with_masks_and_broadcasts():
    f = dk.jit(lambda a, c: dnp.where(a > 0, dnp.sin(a) * c, dnp.exp(a))
               + dnp.tanh(a)[None, :] * c[:, None], fuse=True)
    rng = np.random.default_rng(5)
    a, c = rng.normal(size=5), rng.normal(size=5)
    expected = np.where(a > 0, np.sin(a) * c, np.exp(a)) + np.tanh(a)[None, :] * c[:, None]
    assert_close(f(a, c), expected, rtol=1e-15)
    assert f.program(a, c).fusion.startswith("1 kernel, 0 library calls: k0 = ")
    unfused = dk.jit(f.fun, fuse=False)
    assert unfused.program(a, c).fusion == "" and "np.where" in unfused.program(a, c).source
    assert_close(unfused(a, c), expected, rtol=1e-15)


@pytest.mark.jit
@pytest.mark.jit
def test_fills_and_broadcasts_of_numbers_are_fused():
    f = dk.jit(lambda x: dnp.broadcast_to(2.5, x.shape) * x + dnp.broadcast_to(x[:1], x.shape),
               fuse=True)
    x = np.arange(4.0)
    assert_close(f(x), 2.5 * x + x[0], rtol=1e-15)
    assert f.program(x).fusion.startswith("1 kernel, 0 library calls")


def test_non_contiguous_inputs_are_compiled_for_their_layout():
    x = np.random.default_rng(8).uniform(-1, 1, 40)[::2]  # a strided view
    assert_close(dk.grad(rosenbrock, backend=FUSED)(x), rosenbrock_grad(x), rtol=1e-13)


@pytest.mark.jit
def test_parallel_shares_large_loops_among_threads_with_the_same_values(monkeypatch):
    """parallel=True: a float64 kernel estimated to take 200 µs or more on one core runs
    in parts, one per core (here two, whatever this machine has), each part its own
    machine code; values as one thread's (sums in another order). Shorter kernels, sums
    over rows and float32 kernels that are memory-bound stay on one thread."""
    monkeypatch.setattr(driver, "cores", lambda: 2)
    par = backend("compiled", fuse=True, parallel=True)
    x = np.random.default_rng(9).uniform(-1, 1, 500)
    g = dk.grad(rosenbrock, backend=par)(x)
    assert par.last.fusion.endswith("[llvm]")
    assert_close(g, rosenbrock_grad(x), rtol=1e-13)

    x = np.random.default_rng(9).uniform(-1, 1, 10**6 + 1)  # (parts cut at whole cache lines)
    threads, one = dk.jit(dk.grad(rosenbrock), parallel=True), dk.jit(dk.grad(rosenbrock))
    assert threads.program(x).fusion.endswith("[llvm ×2]")  # memory-bound, but long
    np.testing.assert_array_equal(threads(x), one(x))  # each element as one thread has it
    assert_close(threads(x), rosenbrock_grad(x), rtol=1e-13)
    assert threads.program(x[:200_001]).fusion.endswith("[llvm]")  # ~50 µs: one thread

    x = x[:200_001]
    value = dk.jit(lambda x: dnp.sum(dnp.sin(x) * x), parallel=True)  # compute: ~1 ms
    assert value.program(x).fusion.endswith("[llvm ×2]")
    assert_close(value(x), np.sum(np.sin(x) * x), rtol=1e-12)  # the parts' sums added

    def nested(x):
        for _ in range(10):
            x = dnp.sin(x)
        return x

    x32 = x.astype(np.float32)  # Numba's route: a prange where the work is compute
    assert dk.jit(nested, parallel=True).program(x32).fusion.endswith("[numba prange]")
    assert_close(dk.jit(nested, parallel=True)(x32), dk.jit(nested)(x32), rtol=1e-6)
    assert dk.jit(lambda x: x * 2.0, parallel=True).program(x32).fusion.endswith("[numba]")


@pytest.mark.jit
def test_threaded_kernels_run_in_a_forked_cell(monkeypatch):
    """A harness cell is forked from a process whose kernel threads have run: it starts
    threads of its own (the parent's pool, without its threads, had hung the cell)."""
    from diffkit.bench.cells import run_isolated

    monkeypatch.setattr(driver, "cores", lambda: 2)
    f = dk.jit(lambda x: dnp.sum(dnp.sin(x) * x), parallel=True)
    x = np.linspace(0.0, 1.0, 300_001)
    value = f(x)
    assert f.program(x).fusion.endswith("[llvm ×2]")
    assert run_isolated(lambda: {"v": float(f(x))}, timeout=30) == {"status": "ok", "v": value}


def test_a_kernels_loop_is_cut_at_its_edges():
    """Rosenbrock's gradient reads x[1:] and x[:-1]: its loop is cut where those tests
    change, the tests decided in each range: no branch is left in the machine code's IR,
    for the whole domain and for a thread's share alike."""
    from diffkit.compiler.kernel_ir import build, flattened
    from diffkit.compiler.llvm_kernels import kernel_llvm
    from diffkit.ir.tracer import trace_graph

    plan = fuse(trace_graph(dk.grad(rosenbrock), (np.ones(1000),)))
    ir = flattened(build(plan, plan.kernels[0]))
    assert any(i.op == "if" for i in ir.body)
    for part in (None, (0, 504), (504, 1000)):
        text = kernel_llvm(ir, "k", part)
        assert "then." not in text and "icmp sge" not in text


@pytest.mark.jit
def test_kernels_are_cached_on_disk_for_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFKIT_CACHE", str(tmp_path))
    f = dk.jit(lambda x: dnp.sin(x) * 1.25 + dnp.cos(x) * 0.75, fuse=True)
    f(np.ones(11, np.float32))  # float32: a Numba kernel (float64 ones go through LLVM IR)
    (source,) = (tmp_path / "kernels").glob("k_*.py")
    assert "@njit(cache=True" in source.read_text()
    assert list((tmp_path / "kernels" / "__pycache__").glob("*.nbi"))  # numba's index


@pytest.mark.jit
def test_fused_and_unfused_side_by_side_in_compare():
    from diffkit.bench.harness import compare

    rows = compare(rosenbrock, np.linspace(-1, 1, 6), repeat=1, timeout=120,
                   backends=["compiled[fuse=false]", "compiled"]).records()
    by = {r["backend"]: r for r in rows}
    assert set(by) >= {"compiled", "compiled[fuse=false]"}  # fused is the default
    assert all(by[b]["status"] == "ok" for b in ("compiled", "compiled[fuse=false]"))
    assert "kernel" in str(by["compiled"].get("fusion"))
    assert not by["compiled[fuse=false]"].get("fusion")


SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.jit
@SETTINGS
@given(S.programs("grad", max_ops=5))
def test_random_fused_gradients_agree_with_the_reference(program):
    j = S.judge(program, backends=(FUSED,))
    for v in j.verdicts:
        if v.status in ("agree", "skipped") or v.backend == "reference":
            continue
        assert "traced array is needed" in v.message, j.report()


# ---------------------------------------------------------------- without numba


def test_without_numba_fuse_says_once_what_is_missing_and_still_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` now fails
    monkeypatch.setattr(numba_kernels, "_said_missing", False)
    x = np.random.default_rng(4).uniform(-1, 1, 9)
    with pytest.warns(RuntimeWarning, match=r"pip install diffkit\[jit\]"):
        g = dk.grad(rosenbrock, backend=backend("compiled", fuse=True))(x)
    assert_close(g, rosenbrock_grad(x), rtol=1e-13)
    f = dk.jit(lambda z: dnp.sum(dnp.exp(z) * z), fuse=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second time: silent
        assert_close(f(x), np.sum(np.exp(x) * x), rtol=1e-14)
    assert f.program(x).fusion.endswith("(run unfused: numba missing)")
    assert not f.program(x).kernel_source


def test_compare_says_when_the_compiled_column_ran_without_numba(monkeypatch, capsys):
    from diffkit_cli.main import main

    monkeypatch.setitem(sys.modules, "numba", None)  # the cells run in forked children
    try:
        main(["compare", "rosenbrock", "--backends", "compiled,reverse"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = " ".join(capsys.readouterr().out.split())  # (notes wrap at the terminal's width)
    assert "compiled: ran the unfused numpy program: fused kernels need the jit extra " \
        "(pip install 'diffkit[jit]')" in out
    assert "[-215.6, -88]" in out


def test_fusion_figure_draws_each_way_and_the_memory_bound_line():
    pytest.importorskip("matplotlib")
    from diffkit.bench.experiments import FUSION_WAYS as WAYS
    from diffkit.reporting.fusion import fusion_figure

    rows = [{"way": w, "n": n, "time_s": t * n, "peak_rss_bytes": 16 * n * k}
            for k, (w, t) in enumerate(zip(WAYS, (1e-8, 5e-9, 1e-9)), start=1)
            for n in (10, 100)]
    rows += [{"way": "memory-bound", "n": n, "time_s": 16 * n / 1e10} for n in (10, 100)]
    fig = fusion_figure(rows)
    left, right = fig.axes
    assert [ln.get_label() for ln in left.get_lines()] == [
        *WAYS, "memory-bound: 16n bytes / bandwidth"]
    assert len(right.get_lines()) == 4  # three ways and the 16n bytes of x and g
    assert left.get_lines()[-1].get_ydata()[-1] == pytest.approx(1.6e-7)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the high-water mark is Linux's")
def test_peak_resident_memory_sees_an_array_built_where_freed_memory_was_kept():
    from diffkit.bench.probes import peak_rss_bytes

    for _ in range(2):  # malloc keeps these 16 MB resident after the free (glibc)
        big = np.ones(2 * 10**6)
        del big
    peak = peak_rss_bytes(lambda: np.ones(10**6))  # 8 MB: its pages must still count
    assert 7.9e6 <= peak <= 12e6


def test_fusion_report_measures_each_way_and_the_floor_at_each_size(tmp_path):
    pytest.importorskip("matplotlib")
    import json

    from diffkit.bench.experiments import FUSION_WAYS as WAYS
    from diffkit.reporting.fusion import build

    build({"setup": {"sizes": [100, 1000], "repeat": 1}}, tmp_path)
    rows = json.loads((tmp_path / "fusion.json").read_text())["rows"]
    assert sorted((r["way"], r["n"]) for r in rows) == sorted(
        (w, n) for w in [*WAYS, "memory-bound"] for n in (100, 1000))
    floor = {r["n"]: r for r in rows if r["way"] == "memory-bound"}
    for n, r in floor.items():  # 16n bytes over the bandwidth measured at that n
        assert r["bytes"] == 16 * n
        assert r["time_s"] == pytest.approx(16 * n / r["bandwidth_bytes_per_s"])
    assert (tmp_path / "fusion.png").stat().st_size > 10_000
    caption = (tmp_path / "captions.md").read_text()
    assert "measured at each n (" in caption
    ran = "runs one compiled loop (1 kernel" if importlib.util.find_spec("numba") else \
        "ran unfused here (numba missing"
    assert ran in caption


@pytest.mark.jit
def test_the_driver_keeps_its_intermediate_buffers_and_never_an_output():
    """An MLP step: products into kept buffers (np.matmul(..., out=)), kernels between
    them; the gradient against closed forms; a second call leaves the first's results."""
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(64, 5)), rng.normal(size=64)
    W1, w2 = rng.normal(size=(5, 8)), rng.normal(size=8)

    def loss(W1):
        h = dnp.tanh(X @ W1)
        return dnp.mean((h @ w2 - y) ** 2)

    step = dk.jit(dk.value_and_grad(loss))
    value, g = step(W1)
    prog = step.program(W1)
    assert "np.matmul(" in prog.source and "= _buffers()" in prog.source
    h = np.tanh(X @ W1)
    r = h @ w2 - y
    assert_close(value, np.mean(r ** 2), rtol=1e-14)
    assert_close(g, X.T @ ((2.0 / 64) * np.outer(r, w2) * (1.0 - h * h)), rtol=1e-12)
    first = g.copy()
    value2, g2 = step(W1 * 0.5)
    np.testing.assert_array_equal(g, first)  # the caller's array was not written again
    h2 = np.tanh(X @ (W1 * 0.5))
    assert_close(value2, np.mean((h2 @ w2 - y) ** 2), rtol=1e-14)
    np.testing.assert_array_equal(step(W1)[1], first)


@pytest.mark.jit
@pytest.mark.parametrize("shape, axis, keepdims, named, exact", [
    ((512, 64), 0, False, "[0]", True), ((300, 9), (-2,), True, "[0]", True),
    ((7, 5, 3), (0, 1), False, "[0, 1]", True), ((4, 6, 2), 0, True, "[0]", True),
    ((300, 9), -1, False, "[1]", False), ((6, 5, 4, 3), (0, 2, 3), True, "[0, 2, 3]", False),
    ((5, 4, 3), (-3, -1), False, "[0, 2]", False), ((1000,), -1, True, "[0]", False)])
def test_sums_over_some_axes_fuse_leading_ones_in_numpys_order(shape, axis, keepdims, named,
                                                                 exact):
    G = np.random.default_rng(3).standard_normal(shape)
    f = dk.jit(lambda G: dnp.sum(G * G + 1.0, axis=axis, keepdims=keepdims))
    expected = np.sum(G * G + 1.0, axis=axis, keepdims=keepdims)
    if exact:  # row after row, as numpy adds them
        np.testing.assert_array_equal(f(G), expected)
    else:  # reassociated, as a full sum
        assert_close(f(G), expected, rtol=1e-14)
    assert f(G).shape == expected.shape
    assert f.program(G).fusion.startswith("1 kernel, 0 library calls: ")
    assert f"-> sum{named}->" in f.program(G).fusion


@pytest.mark.jit
def test_a_bias_gradient_is_summed_in_the_kernel_on_every_route(monkeypatch):
    rng = np.random.default_rng(5)
    X, W, b = rng.standard_normal((400, 30)), rng.standard_normal((30, 50)), np.zeros(50)

    def loss(b):
        return dnp.sum(dnp.tanh(dnp.exp(X @ W * 0.1) + b))

    t = np.tanh(np.exp(X @ W * 0.1) + b)
    expected = np.sum(1.0 - t * t, axis=0)
    one = dk.jit(dk.grad(loss))
    assert_close(one(b), expected, rtol=1e-13)
    assert "sum[0]->" in one.program(b).fusion
    threads = dk.jit(dk.grad(loss), parallel=True)  # a sum over rows stays on one thread
    assert_close(threads(b), expected, rtol=1e-13)
    assert "[numba prange]" not in threads.program(b).fusion
    monkeypatch.setattr(driver, "lower", lambda *args: None)  # Numba renders it
    numba_f = dk.jit(dk.grad(loss))
    assert_close(numba_f(b), expected, rtol=1e-13)
    assert "[numba]" in numba_f.program(b).fusion


@pytest.mark.jit
def test_an_output_that_is_a_view_of_a_kernels_array_is_never_kept():
    f = dk.jit(lambda x: (dnp.reshape(dnp.sin(x) * 2.0, (3, 4)),
                          dnp.sum(dnp.transpose(dnp.reshape(dnp.exp(x) + x, (4, 3))) @
                                  dnp.ones((4, 2)))))
    x = np.linspace(-1.0, 1.0, 12)
    first, total = f(x)
    kept = f.program(x).fn.__globals__["_buffers"]()
    assert len(kept) >= 1 and not any(np.shares_memory(first, b) for b in kept)
    again = first.copy()
    f(x + 1.0)
    np.testing.assert_array_equal(first, again)  # not written over by the next call
    np.testing.assert_array_equal(first, np.reshape(np.sin(x) * 2.0, (3, 4)))
    assert total == pytest.approx(2.0 * np.sum(np.exp(x) + x), rel=1e-14)


@pytest.mark.jit
def test_a_stencils_steps_cycle_through_a_few_kept_buffers():
    """Thirty steps of the heat equation, a kernel and a concatenation each way: the
    arrays whose lifetimes do not meet share buffers; the gradient is 2 (Aᵀ)ˢ Aˢ u
    (the step is linear), the same on a second call, and not one of the buffers."""
    from diffkit.bench import workloads as wl

    n, steps = 40, 30
    A = np.eye(n)
    for i in range(1, n - 1):
        A[i, i - 1:i + 2] += 0.25 * np.array([1.0, -2.0, 1.0])
    M = np.linalg.matrix_power(A, steps)
    u = np.sin(np.arange(float(n)))
    step = dk.jit(dk.grad(lambda v: wl.heat_stencil(v, steps=steps)))
    g = step(u)
    assert_close(g, 2.0 * M.T @ M @ u, rtol=1e-12, atol=1e-15)
    prog = step.program(u)
    assert "np.concatenate((" in prog.source and "out=" in prog.source
    kept = prog.fn.__globals__["_buffers"]()
    assert len(kept) > 100 and len({id(b) for b in kept}) <= 12
    assert not any(np.shares_memory(g, b) for b in kept)
    np.testing.assert_array_equal(step(u), g)


@pytest.mark.jit
def test_a_chain_of_thousands_of_operations_is_cut_into_kernels():
    """400 steps of x <- 0.9 sin x + 0.1 x, differentiated: thousands of operations built
    without Python's recursion, as kernels of about KERNEL_OPS each (LLVM's compile time
    grows faster than a kernel), values written at the cuts: the same numbers as unfused;
    the derivative recurrence as reference."""
    def f(x):
        for _ in range(400):
            x = dnp.sin(x) * 0.9 + x * 0.1
        return dnp.sum(x)

    x0 = np.linspace(-2.0, 2.0, 6)
    g = dk.jit(lambda x: dk.grad(f)(x))
    got = g(x0)
    report = g.program(x0).fusion
    ops = [int(n) for n in re.findall(r"k\d+ = (\d+) ops", report)]
    assert ", 0 library calls" in report and sum(ops) > 3000
    assert len(ops) >= 6 and max(ops) <= 2 * KERNEL_OPS
    x, dx = x0.copy(), np.ones_like(x0)
    for _ in range(400):
        x, dx = 0.9 * np.sin(x) + 0.1 * x, (0.9 * np.cos(x) + 0.1) * dx
    assert_close(got, dx, rtol=1e-12)
    np.testing.assert_array_equal(got, dk.jit(lambda x: dk.grad(f)(x), fuse=False)(x0))


@pytest.mark.jit
def test_a_written_out_convolution_cut_into_kernels():
    """A 3-D convolution's gradient: its products written out (new values that share a
    number), kernels past KERNEL_OPS cut, their buffers shared: as forward mode has it."""
    import diffkit.scipy.signal as dss

    r = np.random.default_rng(2)
    a, v = r.standard_normal((4, 4, 3)), r.standard_normal((2, 3, 3))
    w = r.standard_normal((5, 6, 5))

    def f(x, y):
        return dnp.sum(dss.convolve(x, y, "full") * w)

    got = dk.grad(f, argnums=(0, 1), backend="compiled")(a, v)
    for g, e in zip(got, dk.grad(f, argnums=(0, 1), backend="forward")(a, v)):
        assert_close(g, e, rtol=1e-12)


@pytest.mark.jit
def test_float32_arithmetic_is_numpys_to_the_bit():
    """A float32 kernel computes in float32, its numbers too (numpy's weak Python scalars),
    so its arithmetic is numpy's exactly."""
    x = np.random.default_rng(12).uniform(-3.0, 3.0, 1000).astype(np.float32)
    f = lambda x: (x * 0.3 + 1.7) / (x * x + 2.1) - dnp.maximum(x, 0.25)  # noqa: E731
    fused = dk.jit(f)
    y = fused(x)
    assert fused.program(x).fusion.endswith("[numba]") and y.dtype == np.float32
    c = np.float32
    expected = (x * c(0.3) + c(1.7)) / (x * x + c(2.1)) - np.maximum(x, c(0.25))
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(y, dk.jit(f, fuse=False)(x))
