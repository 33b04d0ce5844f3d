"""The layers as imports: no cycle inside the package, and each layer imports only below it.

Every module of ``diffkit`` and ``diffkit_cli`` (``cli/``) is parsed with ``ast``; an edge
``a -> b`` means module ``a`` imports module ``b``. Module-level imports always count. An
import inside a function counts too, unless its line carries a comment: a function-level
import is allowed to defer a heavy optional dependency (SymPy, matplotlib, a peer
library), and says so where it stands.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"diffkit": ROOT / "diffkit", "diffkit_cli": ROOT / "cli"}


def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package)."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = modules()


def targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads (``from p import name``: p.name if a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, one level up per extra dot
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source
            for a in node.names]


def imports(module: str, deferred: bool = False) -> set[str]:
    """The package modules ``module`` imports; with ``deferred``, also the function-level
    imports whose line says why they wait (a comment)."""
    path, is_package = MODULES[module]
    source = path.read_text()
    lines = source.splitlines()
    found: set[str] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                explained = "#" in lines[child.lineno - 1]
                if not in_function or deferred or not explained:
                    found.update(t for t in targets(module, is_package, child) if t in MODULES)
            visit(child, in_function or isinstance(child, (ast.FunctionDef,
                                                           ast.AsyncFunctionDef)))

    visit(ast.parse(source), False)
    return found - {module}


GRAPH = {m: imports(m) for m in MODULES}
EVERY_IMPORT = {m: imports(m, deferred=True) for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_graph_sees_the_layers():
    """The parser finds what is plainly there (a check of the check)."""
    assert "diffkit.core" in GRAPH["diffkit.backends"]
    assert "diffkit.bench.cells" in GRAPH["diffkit.bench.harness"]
    assert "diffkit.backends" in GRAPH["diffkit.backends.peers"]  # from .. import Backend
    assert "diffkit.core" in GRAPH["diffkit.backends.peers.numdifftools"]  # from ...core
    assert "diffkit.ir.graph" in GRAPH["diffkit.ir.tracer"]  # from .graph
    assert "diffkit.reporting.plots" in EVERY_IMPORT["diffkit.reporting.figures"]  # deferred
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_cycle_inside_the_package():
    assert cycles(GRAPH) == []


def imported_from(prefixes: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """``a -> b`` for every import, deferred or not, from under ``prefixes`` into ``forbidden``."""
    def under(m: str, names: tuple[str, ...]) -> bool:
        return any(m == n or m.startswith(n + ".") for n in names)

    return [f"{a} -> {b}" for a, bs in EVERY_IMPORT.items() if under(a, prefixes)
            for b in sorted(bs) if under(b, forbidden)]


BELOW_INTERPRETERS = ("diffkit.interpreters", "diffkit.ir", "diffkit.compiler", "diffkit.backends",
                      "diffkit.transforms", "diffkit.views", "diffkit.bench", "diffkit.reporting")


@pytest.mark.parametrize("layer,forbidden", [
    (("diffkit.core", "diffkit.primitives"), BELOW_INTERPRETERS),
    (("diffkit.numpy", "diffkit.nplib", "diffkit.scipy"), BELOW_INTERPRETERS),
    (("diffkit.interpreters",), BELOW_INTERPRETERS[1:] + ("diffkit.nn",)),
    (("diffkit.ir",), BELOW_INTERPRETERS[:1] + BELOW_INTERPRETERS[2:] + ("diffkit.nn",)),
    (("diffkit.compiler",), BELOW_INTERPRETERS[:1] + BELOW_INTERPRETERS[3:] + ("diffkit.nn",)),
    (("diffkit.backends",), ("diffkit.transforms", "diffkit.views", "diffkit.bench",
                             "diffkit.reporting", "diffkit_cli")),
    (("diffkit.transforms",), ("diffkit.views", "diffkit.bench", "diffkit.reporting",
                               "diffkit_cli")),
    (("diffkit.views",), ("diffkit.compiler", "diffkit.backends", "diffkit.transforms",
                          "diffkit.bench", "diffkit.reporting", "diffkit_cli")),
    (("diffkit.bench",), ("diffkit.reporting", "diffkit_cli")),
    (("diffkit",), ("diffkit_cli",)),
], ids=["core", "numpy", "interpreters", "ir", "compiler", "backends", "transforms", "views", "bench",
        "library"])
def test_each_layer_imports_only_below_it(layer, forbidden):
    assert imported_from(layer, forbidden) == []


def folder(module: str) -> str:
    """The folder a module lives in (``diffkit.compiler.passes`` -> ``diffkit.compiler``);
    a top-level module (``diffkit.numpy``) is its own."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or MODULES[module][1] else module


def test_no_import_cycle_between_files_even_deferred():
    """A function-level import defers a heavy library; it is no licence for a cycle."""
    assert cycles(EVERY_IMPORT) == []


def test_no_import_cycle_between_folders():
    """interpreters/, ir/ and compiler/ (and every other folder) form no loop: the compiler
    takes graphs from ir/, and neither imports back."""
    folders: dict[str, set[str]] = {folder(m): set() for m in MODULES}
    for a, bs in EVERY_IMPORT.items():
        folders[folder(a)] |= {folder(b) for b in bs} - {folder(a)}
    assert cycles({"x": {"y"}, "y": {"x"}}) and cycles(folders) == []


def test_the_namespaces_expose_only_their_names():
    """diffkit.numpy is numpy's functions and constants, not the helpers it imports (by
    attribute as well as by dir); dir(diffkit) lists no module it uses internally."""
    assert sorted(n for n in vars(dnp) if not n.startswith("_") and n not in dnp.__all__) == []
    for helper in ("bind", "Box", "Any", "annotations", "functools", "inspect", "primal"):
        with pytest.raises(AttributeError):
            getattr(dnp, helper)
    assert "importlib" not in dir(dk) and dnp.linalg.lstsq is not None


def _is_prim_name(node: ast.AST) -> bool:
    """``prim.name`` or ``<anything>.prim.name``: a primitive asked its name."""
    return isinstance(node, ast.Attribute) and node.attr == "name" and (
        isinstance(node.value, ast.Name) and node.value.id == "prim"
        or isinstance(node.value, ast.Attribute) and node.value.attr == "prim")


def name_tests(module: str) -> list[str]:
    """Where ``module`` decides something by a primitive's name: a comparison with it, or a
    table looked up by it (``RULES.get(prim.name)``, ``LOWERING[prim.name]``)."""
    path, _ = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        asked = []
        if isinstance(node, ast.Compare):
            asked = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id.isupper():
            asked = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args:
            asked = [node.args[0]]
        if any(_is_prim_name(a) for a in asked):
            found.append(f"{module}:{node.lineno}")
    return found


def test_no_module_outside_the_table_asks_a_primitive_its_name():
    """What an interpreter or a compiler pass needs to know of an operation is a field of
    its entry (kind, linear, lower, taylor, sparsity …), or the primitive itself
    (``e.prim is P.matmul``), never its name."""
    assert name_tests("diffkit.compiler.driver") == [] and _is_prim_name(
        ast.parse("e.prim.name").body[0].value)
    layers = ("diffkit.compiler", "diffkit.interpreters", "diffkit.transforms", "diffkit.ir")
    found = [hit for m in MODULES if m.startswith(layers) for hit in name_tests(m)]
    assert found == []


def test_one_class_per_name():
    """A class name means one thing across the package (no two Graphs, Tapes, Programs)."""
    seen: dict[str, list[str]] = {}
    for module, (path, _) in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                seen.setdefault(node.name, []).append(module)
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


# --------------------------------------------------------------------------- docs/architecture.md

DOC = (ROOT / "docs" / "architecture.md").read_text()


def doc_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, code: str):
    """``code`` from the document, imported as module ``name``."""
    (tmp_path / f"{name}.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_the_documented_primitive_works_in_every_mode(tmp_path, monkeypatch):
    block = re.search(r"```python\n(expm1 = unary\(.*?)```", DOC, re.DOTALL).group(1)
    header = ("import numpy as np\nfrom diffkit.primitives import lowering as low\n"
              "from diffkit.primitives.elementwise import exp, unary\n")
    expm1 = doc_module(tmp_path, monkeypatch, "doc_expm1", header + block).expm1
    x = np.array([-0.5, 0.25, 1.5])
    np.testing.assert_array_equal(expm1(x), np.expm1(x))
    for backend in ("forward", "reverse", "symbolic"):
        np.testing.assert_allclose(dk.derivative(expm1, backend=backend)(x), np.exp(x),
                                   rtol=1e-15)
    np.testing.assert_allclose(dk.hessian(lambda v: dnp.sum(expm1(v)))(x), np.diag(np.exp(x)),
                               rtol=1e-15)


def test_a_primitive_defined_in_a_test_runs_everywhere(tmp_path, monkeypatch):
    """The documented toy entry, softsign(x) = x / (1 + |x|), against its closed-form
    derivatives 1/(1+|x|)^2, -2 sign(x)/(1+|x|)^3, 6/(1+|x|)^4: every interpreter,
    Taylor mode, sparsity, and the compiled backend fused (with numba) and unfused."""
    code = re.search(r"```python\n(import numpy as np\n\nfrom diffkit.core import Primitive.*?)```",
                     DOC, re.DOTALL).group(1)
    softsign = doc_module(tmp_path, monkeypatch, "doc_softsign", code).softsign
    x = np.array([-2.0, -0.3, 0.4, 3.0])
    u = 1.0 + np.abs(x)
    d1, d2, d3 = 1.0 / u**2, -2.0 * np.sign(x) / u**3, 6.0 / u**4
    f = lambda v: dnp.sum(softsign(v))  # noqa: E731
    for backend in ("forward", "reverse", "symbolic", "compiled", "compiled[fuse=false]"):
        np.testing.assert_allclose(dk.grad(f, backend=backend)(x), d1, rtol=1e-14)
    np.testing.assert_allclose(dk.hessian(f)(x), np.diag(d2), rtol=1e-14)
    np.testing.assert_allclose(dk.vmap(dk.grad(lambda v: softsign(v)))(x), d1, rtol=1e-14)
    for k, x0 in enumerate(x):
        series = dk.derivatives(softsign, 3)(x0)
        np.testing.assert_allclose(series, [x0 / u[k], d1[k], d2[k], d3[k]], rtol=1e-13)
    pattern = dk.jacobian_sparsity(lambda v: softsign(v[1:]) - softsign(v[:-1]))(x)
    assert pattern.toarray().astype(int).tolist() == [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    plan = dk.jit(dk.grad(f)).program(x).fusion  # the whole gradient: one loop
    assert plan.startswith("1 kernel, 0 library calls"), plan
    assert plan.endswith("[llvm]") == (importlib.util.find_spec("numba") is not None), plan


def test_the_documented_backend_works_through_the_defaults(tmp_path, monkeypatch):
    code = re.search(r'```python\n("""central.*?)```', DOC, re.DOTALL).group(1)
    central = doc_module(tmp_path, monkeypatch, "doc_central", code).Central()
    x = np.array([-1.2, 0.3, 2.0])
    f = lambda v: dnp.sum(dnp.sin(v) * v)  # noqa: E731
    np.testing.assert_allclose(dk.grad(f, backend=central)(x), np.sin(x) + x * np.cos(x),
                               rtol=1e-8)
    assert central.stats(f, x) == {"fevals": 6}
    v = np.array([1.0, -2.0, 0.5])
    y, y_dot = dk.jvp(dnp.sin, (x,), (v,), backend=central)  # the base's jvp, from jacobian
    np.testing.assert_array_equal(y, np.sin(x))
    np.testing.assert_allclose(y_dot, np.cos(x) * v, rtol=1e-8)
    _, pull = dk.vjp(dnp.sin, x, backend=central)
    np.testing.assert_allclose(pull(v)[0], v * np.cos(x), rtol=1e-8)
    np.testing.assert_allclose(dk.derivative(dnp.sin, backend=central)(x), np.cos(x), rtol=1e-8)


def test_every_package_is_installed_by_pyproject():
    """A regular (non-editable) install ships every package folder: pyproject lists each."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(root).parts)
             for p in (root / "diffkit").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
