"""Peer backends (autograd, jax, torch, numdifftools, scipy) and plug-in registration.

Each adapter's tests run when its library is installed and are skipped, with the reason,
otherwise; CI installs autograd and numdifftools. Derivatives are checked against the
high-precision references of :mod:`diffkit.bench.reference` (tight for AD, looser for the
finite-difference peers). The unavailable path and entry-point registration need no
optional library.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import needs, assert_close

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.backends import peers
from diffkit.bench import catalog
from diffkit.bench.reference import reference

registry = importlib.import_module("diffkit.backends")  # dk.backends is the function

ROOT = Path(__file__).resolve().parents[1]


def cases(pairs: list[tuple[str, dict]]) -> list:
    """Each peer with its options, marked with its extra (SciPy is in the core install)."""
    return [pytest.param(name, options, id=name + "".join(f":{k}={v}" for k, v in options.items()),
                         marks=() if name == "scipy" else getattr(pytest.mark, name))
            for name, options in pairs]


AD = cases([("autograd", {}), ("jax", {}), ("jax", {"jit": True}), ("torch", {"mode": "func"}),
            ("torch", {"mode": "backward"})])
NUMERIC = cases([("numdifftools", {}), ("scipy", {})])
# torch tensors refuse numpy operands in Python operators (ndarray * tensor), and np.any()
TORCH_REFUSES = {"logistic_regression", "least_squares", "mlp_loss", "griewank",
                 "babylonian_sqrt", "newton_cbrt", "recursive_exp"}
GRAD = ["rosenbrock", "ackley", "speelpenning", "sin_product", "styblinski_tang",
        "logistic_regression", "mlp_loss"]
JAC = ["broyden", "polar_to_cartesian", "softmax", "tanh_ax"]
DERIV = ["logistic_map", "nested_sin", "runge", "piecewise", "where_piecewise", "relu_near"]


def make(name: str, options: dict) -> dk.Backend:
    return dk.backend(name, **options)


def expect_limits(request, name: str, options: dict, fn: str) -> None:
    """Skip what a peer cannot do by design; mark what awaits core support."""
    if name == "torch" and fn in TORCH_REFUSES:
        pytest.skip(f"{fn} mixes numpy arrays and the input in Python operators or np.any(), "
                    "which torch tensors refuse")
    if options.get("jit") and not catalog.get(fn).closed_form:
        pytest.skip("jit cannot compile a branch on a value")


def check_catalog(backend: dk.Backend, fn: str, rtol: float) -> None:
    entry = catalog.get(fn)
    f, x = entry.make()
    transform = {"grad": dk.grad, "jacobian": dk.jacobian, "derivative": dk.derivative}
    got = transform[entry.kind](f, backend=backend)(x)
    assert_close(got, reference(f, x, entry.kind).derivative, rtol=rtol)


# --------------------------------------------------------------------------- AD peers


@pytest.mark.parametrize("fn", GRAD + JAC + DERIV)
@pytest.mark.parametrize("name,options", AD)
def test_ad_peer_matches_the_reference(request, name, options, fn):
    backend = make(name, options)
    expect_limits(request, name, options, fn)
    check_catalog(backend, fn, rtol=1e-12)


@pytest.mark.parametrize("fn", ["rosenbrock", "beale", "sin_product", "ackley"])
@pytest.mark.parametrize("name,options", AD)
def test_ad_peer_hessian(name, options, fn):
    f, x = catalog.get(fn).make()
    got = dk.hessian(f, backend=make(name, options))(x)
    assert_close(got, reference(f, x, "hessian").derivative, rtol=1e-11)


@pytest.mark.parametrize("name,options", AD)
def test_ad_peer_jvp_vjp_and_aux(name, options):
    b = make(name, options)
    f, x = catalog.get("polar_to_cartesian").make()
    jac = reference(f, x, "jacobian").derivative
    v, u = np.array([0.3, -1.1]), np.array([2.0, 0.5])
    y, y_dot = dk.jvp(f, (x,), (v,), backend=b)
    assert_close(y, f(x), rtol=1e-15)
    assert_close(y_dot, jac @ v, rtol=1e-13)
    y, pull = dk.vjp(f, x, backend=b)
    assert_close(pull(u)[0], u @ jac, rtol=1e-13)

    def loss(w, scale):
        return dnp.sum(dnp.sin(w) * scale) ** 2, {"norm": dnp.sum(w * w)}

    w = np.array([0.2, 0.7, -0.4])
    (value, aux), (gw, gs) = dk.value_and_grad(loss, argnums=(0, 1), has_aux=True,
                                               backend=b)(w, 1.5)
    (value_r, aux_r), (gw_r, gs_r) = dk.value_and_grad(loss, argnums=(0, 1), has_aux=True)(w, 1.5)
    assert type(aux["norm"]) in (float, np.float64) and abs(aux["norm"] - aux_r["norm"]) < 1e-15
    assert_close(value, value_r, rtol=1e-15)
    assert_close(gw, gw_r, rtol=1e-13)
    assert_close(gs, gs_r, rtol=1e-13)
    d = dk.derivative(dnp.tanh, backend=b)(np.linspace(-2.0, 2.0, 9))
    assert isinstance(d, np.ndarray) and d.flags.writeable
    assert_close(d, 1.0 - np.tanh(np.linspace(-2.0, 2.0, 9)) ** 2, rtol=1e-15)


@pytest.mark.parametrize("name,options", AD)
def test_peer_inside_a_diffkit_transform_is_a_clear_error(name, options):
    b = make(name, options)
    with pytest.raises(dk.DiffkitError, match="cannot run inside another diffkit transform"):
        dk.grad(lambda x: dk.grad(dnp.sin, backend=b)(x))(0.5)


@pytest.mark.jax
def test_jax_jit_compiles_once_and_reports_setup():
    b = make("jax", {"jit": True})
    f, x = catalog.get("rosenbrock").make(n=5)
    g = dk.grad(f, backend=b)
    g(x)
    first = b.stats(f, x)["setup_s"]
    assert first > 0
    assert_close(g(x + 1.0), reference(f, x + 1.0).derivative, rtol=1e-12)
    assert b.stats(f, x)["setup_s"] == first  # the same compiled function: no new compile
    with pytest.raises(dk.DiffkitError, match="branches on values.*dnp.where"):
        dk.derivative(catalog.get("piecewise").fn, backend=b)(0.5)


@pytest.mark.jax
@pytest.mark.parametrize("jit", [False, True])
def test_jax_transforms_nest_as_jaxs_own_do(jit):
    """An inner jax-backend derivative inside an outer one, closing over the outer
    variable, also inside dk.fori_loop (lax.fori_loop on JAX's arrays): JAX's values flow
    through, and the outer call compiles the whole program."""
    b = make("jax", {"jit": jit})
    # d/dw [d/dx (w x^3 + sin(w x)) at x = 1.5] = 3 x^2 + cos(w x) - w x sin(w x)
    x, w = 1.5, 0.4
    inner = lambda w: dk.grad(lambda x: w * x ** 3 + dnp.sin(w * x), backend=b)(x)  # noqa: E731
    assert_close(dk.grad(inner, backend=b)(w),
                 3 * x ** 2 + np.cos(w * x) - w * x * np.sin(w * x), rtol=1e-13)

    def flow(w):  # 20 steps of y <- y - 0.1 d/dy (w y^2 / 2): y_20 = y_0 (1 - 0.1 w)^20
        step = lambda i, y: y - 0.1 * dk.grad(lambda y: w * y * y / 2, backend=b)(y)  # noqa: E731
        return dk.fori_loop(0, 20, step, 2.0 + 0.0 * w)
    assert_close(dk.grad(flow, backend=b)(w), 2.0 * 20 * (1 - 0.1 * w) ** 19 * -0.1,
                 rtol=1e-13)


@pytest.mark.jax
def test_jax_jit_stages_a_call_with_array_data_once(monkeypatch):
    """value_and_grad in one argument of f(p, data) with a data array: one compile of the
    whole call for every data of that shape, not one per call (as jax.jit of the caller)."""
    b = make("jax", {"jit": True})
    jax = needs("jax")
    compiles, real_jit = [], jax.jit
    monkeypatch.setattr(jax, "jit", lambda *a, **k: compiles.append(1) or real_jit(*a, **k))
    vg = dk.value_and_grad(lambda p, a: dnp.sum(a * dnp.sin(p)), backend=b)
    p = np.array([0.3, -1.2])
    for a in (np.array([1.0, 2.0]), np.array([-3.0, 0.5])):
        value, g = vg(p, a)
        assert_close(value, np.sum(a * np.sin(p)), rtol=1e-14)
        assert_close(g, a * np.cos(p), rtol=1e-14)
    assert len(compiles) == 1


@pytest.mark.torch
def test_torch_mode_is_checked():
    needs("torch")
    with pytest.raises(dk.DiffkitError, match="unknown mode 'eager'.*func, backward"):
        dk.backend("torch", mode="eager")


# --------------------------------------------------------------------------- numeric peers


@pytest.mark.parametrize("fn", GRAD + JAC + ["logistic_map", "runge", "piecewise"])
@pytest.mark.parametrize("name,options", NUMERIC)
def test_numeric_peer_matches_the_reference(name, options, fn):
    check_catalog(make(name, options), fn, rtol=1e-8)  # extrapolated differences: ~1e-10


@pytest.mark.parametrize("name,options", NUMERIC)
def test_numeric_peer_hessian_jvp_vjp(name, options):
    b = make(name, options)
    f, x = catalog.get("beale").make()
    assert_close(dk.hessian(f, backend=b)(x), reference(f, x, "hessian").derivative, rtol=1e-6)
    g, x = catalog.get("broyden").make()
    jac = reference(g, x, "jacobian").derivative
    v = np.linspace(-1.0, 1.0, x.size)
    assert_close(dk.jvp(g, (x,), (v,), backend=b)[1], jac @ v, rtol=1e-8)
    assert_close(dk.vjp(g, x, backend=b)[1](v)[0], v @ jac, rtol=1e-8)


@pytest.mark.numdifftools
def test_numdifftools_options():
    b = make("numdifftools", {"method": "complex"})
    assert_close(dk.grad(lambda x: dnp.sum(dnp.exp(x) * x), backend=b)([0.5, 1.0]),
                 np.exp([0.5, 1.0]) * (1.0 + np.array([0.5, 1.0])), rtol=1e-13)
    with pytest.raises(dk.DiffkitError, match="unknown method 'sideways'"):
        dk.backend("numdifftools", method="sideways")


def test_scipy_counts_evaluations():
    b = make("scipy", {})
    f = catalog.get("booth").fn
    dk.grad(f, backend=b)(np.array([0.5, 1.0]))
    assert b.stats(f, np.array([0.5, 1.0]))["fevals"] > 2


# --------------------------------------------------------------------------- registration


def test_pyproject_entry_points_load_without_importing_the_libraries():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]["diffkit.backends"]
    assert set(points) == set(peers.PEERS)
    for name, target in points.items():
        module, cls = target.split(":")
        backend_class = getattr(__import__(module, fromlist=[cls]), cls)
        assert backend_class.name == name and issubclass(backend_class, dk.Backend)
        assert name in project["optional-dependencies"]
        assert f"'diffkit[{name}]'" in str(peers.missing(name, "X", name))
    code = ("import sys, diffkit as dk\n"
            "for name in dk.backends():\n"
            "    try: dk.backend(name)\n"
            "    except dk.DiffkitError: pass\n"
            "print(sorted(m for m in ('jax', 'torch', 'autograd', 'numdifftools') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # made, listed, but nothing imported before first use


def test_installed_peers_are_registered():
    names = {ep.name for ep in importlib.metadata.entry_points(group="diffkit.backends")}
    if not names:
        pytest.skip("diffkit is not installed with its entry points (pip install -e .)")
    assert set(peers.PEERS) <= set(dk.backends())


from test_cli import run as cli  # noqa: E402  (exit code, stdout, stderr) in this process


def register(monkeypatch, **targets: str) -> None:
    """Add entry points ``name="module:Class"`` to the group diffkit reads."""
    real = registry.entry_points

    def fake(group: str):
        extra = [importlib.metadata.EntryPoint(n, t, group) for n, t in targets.items()]
        return list(real(group=group)) + extra

    monkeypatch.setattr(registry, "entry_points", fake)


MISSING = '''
from diffkit.backends.peers import PeerBackend

class Missing(PeerBackend):
    name = "nosuch"
    requires = ("diffkit_no_such_library", "NoSuchLib", "nosuch")
'''


def test_a_backend_whose_library_is_missing_is_listed_unavailable(monkeypatch, tmp_path, capsys):
    (tmp_path / "nosuch_backend.py").write_text(MISSING)
    monkeypatch.syspath_prepend(str(tmp_path))
    register(monkeypatch, nosuch="nosuch_backend:Missing")
    assert "nosuch" in dk.backends()
    message = "the nosuch backend needs NoSuchLib: pip install 'diffkit[nosuch]'"
    with pytest.raises(dk.DiffkitError, match=re.escape(message)):
        dk.backend("nosuch")
    code, out, _ = cli(capsys, "list", "--format", "json")
    assert code == 0 and f"unavailable: {message}" in out
    code, _, err = cli(capsys, "compare", "rosenbrock", "--backends", "reverse,nosuch")
    assert code == 2 and err.strip() == f"diffkit: error: {message}"


def test_a_shipped_peer_without_its_library(monkeypatch):
    monkeypatch.setattr(peers, "installed", lambda module: False)
    with pytest.raises(dk.DiffkitError) as exc:
        dk.backend("jax")
    assert str(exc.value) == "the jax backend needs JAX: pip install 'diffkit[jax]'"
    with pytest.raises(dk.DiffkitError, match=re.escape("pip install 'diffkit[torch]'")):
        dk.backend("torch", mode="backward")
    with pytest.raises(dk.DiffkitError, match=re.escape(
            "the scipy backend needs SciPy >= 1.15: pip install 'diffkit[scipy]'")):
        dk.backend("scipy")
    with pytest.raises(dk.DiffkitError, match="needs NoSuch"):
        peers.require("diffkit_no_such_module", "x", "NoSuch", "x")


def test_the_documented_backend_plugs_in(monkeypatch, tmp_path, capsys):
    """docs/backends.md's example, registered as an entry point, works everywhere."""
    doc = (ROOT / "docs" / "backends.md").read_text()
    code = re.search(r"```python\n(\"\"\"complex_step.*?)```", doc, re.DOTALL).group(1)
    assert len(code.strip().splitlines()) <= 50
    (tmp_path / "complex_step.py").write_text(textwrap.dedent(code))
    monkeypatch.syspath_prepend(str(tmp_path))
    register(monkeypatch, complex_step="complex_step:ComplexStep")
    assert "complex_step" in dk.backends()
    for fn in ["rosenbrock", "sin_product", "broyden", "logistic_map"]:
        check_catalog(dk.backend("complex_step"), fn, rtol=1e-14)
    f, x = catalog.get("beale").make()
    with pytest.raises(dk.DiffkitError, match="does not compute Hessians"):
        dk.hessian(f, backend="complex_step")(x)
    result = dk.compare("rosenbrock", backends=["reverse", "complex_step[step=1e-20]"], repeat=1)
    rows = {r["backend"]: r for r in result.records()}
    assert rows["complex_step[step=1e-20]"]["status"] == "ok"
    assert rows["complex_step[step=1e-20]"]["error"] < 1e-14
    code, out, _ = cli(capsys, "list")
    assert code == 0 and "complex_step" in out


# --------------------------------------------------------------------------- the race


def test_bench_writes_a_markdown_table(tmp_path):
    out = tmp_path / "race.md"
    done = subprocess.run([sys.executable, "-m", "diffkit_cli.main", "bench", "--quick",
                           "--repeat", "1", "--quiet", "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    for field in ("- date:", "- machine:", "cpus", "- versions:", "numpy", "- malloc:"):
        assert field in text
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0].startswith("| measure | diffkit | opponent | ratio | target |")
    assert any("Rosenbrock" in line and "reverse / f" in line for line in table)
    assert len(table) >= 12
