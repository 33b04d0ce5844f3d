"""The command line end to end: outputs parse back, every user mistake is one clear line."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from diffkit.bench.harness import DEFAULT_BACKENDS
from diffkit.bench.iterative import PROBLEMS as _PROBLEMS, exact_gradient as _exact_gradient
from diffkit_cli.main import main


def run(capsys, *argv):
    """(exit code, stdout, stderr) of ``diffkit argv`` run in this process."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def console(*argv, timeout=120):
    """The installed console script (or its module) in a real subprocess."""
    exe = shutil.which("diffkit")
    cmd = [exe] if exe else [sys.executable, "-m", "diffkit_cli.main"]
    return subprocess.run(cmd + list(argv), capture_output=True, text=True, timeout=timeout)


def test_console_script_compares_a_catalog_function():
    p = console("compare", "rosenbrock", "--repeat", "1")
    assert p.returncode == 0, p.stderr
    rows = [line.split()[:2] for line in p.stdout.splitlines()[3:8]]
    assert rows == [[b, "ok"] for b in DEFAULT_BACKENDS]  # the CLI's default is the library's
    assert "Traceback" not in p.stderr


def test_compare_ends_with_the_answers_and_keeps_the_cost_column_at_80_columns():
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    p = subprocess.run([shutil.which("diffkit") or sys.executable, *([] if shutil.which(
        "diffkit") else ["-m", "diffkit_cli.main"]), "compare", "rosenbrock", "--repeat", "1",
        "--backends", "numeric,forward,reverse", "--calls", "7"], capture_output=True,
        text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    head = next(line for line in lines if line.startswith("backend"))
    assert "cost" in head.split() and "size" not in head.split()  # size goes first
    assert all(len(line) <= 80 for line in lines)
    rows = {line.split()[0]: line.split() for line in lines[lines.index(head) + 2:][:3]}
    errors = {b: float(r[4]) for b, r in rows.items()}
    best = min(errors.values())
    accurate = next(line for line in lines if line.startswith("most accurate: "))
    assert set(accurate[15:accurate.index(" (")].split(", ")) == {
        b for b, e in errors.items() if e == best}
    for question in ("fastest per call: ", "fastest over 7 calls, setup included: ",
                     "least memory: "):
        assert any(line.startswith(question) for line in lines), question


def test_help_is_fast_and_teaches():
    start = time.perf_counter()
    p = console("--help")
    assert p.returncode == 0 and time.perf_counter() - start < 3
    assert "diffkit compare rosenbrock" in p.stdout
    p = console("compare", "--help")
    assert "Examples" in p.stdout and "--backends" in p.stdout


def test_formula_json_and_csv_parse_back(capsys):
    code, out, _ = run(capsys, "compare", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=0.5",
                       "--backends", "forward,reverse", "--repeat", "1", "--format", "json")
    assert code == 0
    records = json.loads(out)
    exact = [1 / 2 + 0.5, 2 - np.cos(0.5)]
    for r in records:
        np.testing.assert_allclose(r["derivative"], exact, rtol=1e-15)
        assert r["status"] == "ok" and r["tape_ops"] == 7
    code, out, _ = run(capsys, "compare", "x^3 - 2*x", "--at", "x=1.5", "--backends",
                       "numeric[method=richardson],symbolic", "--repeat", "1", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["backend"] for r in rows] == ["numeric[method=richardson]", "symbolic"]
    assert float(rows[0]["derivative"]) == pytest.approx(3 * 1.5**2 - 2, rel=1e-12)
    assert float(rows[1]["error"]) == 0.0


def test_file_function_and_markdown_output(capsys, tmp_path):
    src = tmp_path / "model.py"
    src.write_text("import diffkit.numpy as dnp\n\ndef loss(w):\n"
                   "    return dnp.sum(dnp.tanh(w) ** 2)\n")
    out_file = tmp_path / "table.md"
    code, _, _ = run(capsys, "compare", f"{src}:loss", "--at", "x=[0.1,0.2]", "--backends",
                     "forward,reverse", "--repeat", "1", "--format", "markdown", "-o",
                     str(out_file))
    assert code == 0
    text = out_file.read_text()
    assert text.startswith("| backend |") and text.count("\n") >= 3


def test_list_steps_and_swell(capsys):
    code, out, _ = run(capsys, "list", "--format", "json")
    listing = json.loads(out)
    assert len(listing["functions"]) >= 30
    assert {"forward", "reverse", "symbolic", "numeric"} <= {b["backend"] for b in
                                                             listing["backends"]}
    code, out, _ = run(capsys, "steps", "sin(x)", "--at", "x=1", "--methods", "forward,central",
                       "--format", "json")
    rows = json.loads(out)
    auto = [r for r in rows if r["auto"]]
    assert len(auto) == 2 and all(r["error"] < 1e-7 for r in auto)
    tiny = [r for r in rows if r["method"] == "forward" and r["step"] == 1e-16][0]
    assert tiny["error"] > 1e-2  # round-off wins at tiny steps
    code, out, _ = run(capsys, "swell", "logistic_map", "--depth", "1..4", "--format", "json")
    rows = json.loads(out)
    sym = [r["expr_nodes"] for r in rows if r["backend"] == "symbolic"]
    tape = [r["tape_ops"] for r in rows if r["backend"] == "reverse"]
    assert sym == sorted(sym) and sym[-1] > 10 * sym[0]
    assert tape == [3, 6, 9, 12]


ERRORS = [
    (["compare", "rosenbruck"], "did you mean rosenbrock"),
    (["compare", "x +* 2"], "formula error at column"),
    (["compare", "__import__('os').system('touch HACKED')"], "formula error"),
    (["compare", "x.__class__"], "attribute access"),
    (["compare", "rosenbrock", "--backends", "foo"], "unknown backend 'foo'"),
    (["compare", "rosenbrock", "--backends", "numeric[method=spline]"], "unknown method"),
    (["compare", "missing_file.py:f"], "file not found"),
    (["compare", "no_such_module_xyz:f"], "cannot import module"),
    (["compare", "x1 + x2", "--at", "x1=1"], "missing value for x2"),
    (["compare", "x1 + x2", "--at", "z=1"], "does not use"),
    (["compare", "rosenbrock", "--at", "x=abc"], "not a number"),
    (["compare", "rosenbrock", "--at", "nonsense"], "bad --at entry"),
    (["compare", "rosenbrock", "--timeout", "-1"], "--timeout"),
    (["compare", "exp", "--dim", "3"], "fixed input dimension"),
    (["compare", "exp", "--depth", "3"], "no depth"),
    (["compare"], "Missing argument"),
    (["compar", "rosenbrock"], "No such command"),
    (["steps", "sin(x)", "--methods", "spline"], "unknown method"),
    (["swell", "exp"], "has no depth"),
    (["swell", "logistic_map", "--depth", "0..3"], "bad depth"),
]


@pytest.mark.parametrize("argv, message", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_every_mistake_is_one_clear_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "HACKED").exists()


def test_tables_show_brackets_as_text_not_markup():
    from diffkit_cli.output import render

    text = render([{"backend": "jax", "options": "pip install 'diffkit[jax]'"}], "table")
    assert "diffkit[jax]" in text


# ---------------------------------------------------------------- compare --solver


def test_compare_solver_ways_as_json(capsys) -> None:
    code, out, _ = run(capsys, "compare", "fixed_point_sqrt", "--solver", "all", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["way"] for r in rows] == ["implicit", "unrolled"]
    exact = _exact_gradient("fixed_point_sqrt", _PROBLEMS["fixed_point_sqrt"].point)
    for r in rows:
        np.testing.assert_allclose(r["derivative"], exact, rtol=1e-10)
        assert r["error"] < 1e-10 and r["peak_bytes"] > 0 and r["time_s"] > 0


def test_compare_solver_table_and_refusals(capsys) -> None:
    code, out, _ = run(capsys, "compare", "logistic_ode", "--solver", "discrete,continuous")
    assert code == 0 and "discrete" in out and "continuous" in out
    code, out, _ = run(capsys, "compare", "robertson", "--solver", "continuous")
    assert code == 0 and "n/a" in out and "stiff" in out
    for argv, words in ((("rosenbrock", "--solver", "implicit"), "iterative functions"),
                        (("newton_cubic", "--solver", "adjoint"), "not 'adjoint'")):
        code, _, err = run(capsys, "compare", *argv)
        assert code == 2 and words in err and err.count("\n") == 1


def test_compare_backends_on_a_solver_entry_measures_against_its_exact_gradient(capsys) -> None:
    code, out, _ = run(capsys, "compare", "newton_cubic", "--backends", "forward,reverse",
                       "--repeat", "1", "--format", "json")
    assert code == 0
    assert all(r["status"] == "ok" and r["error"] < 1e-12 for r in json.loads(out))
