"""GradBench's evals as workloads: `diffkit compare EVAL --size`, `diffkit list`, the report.

Every gradient is checked against the eval's gradient derived by hand in plain numpy
(``diffkit.gradbench.workloads``), which no backend computes.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import diffkit as dk
from diffkit.bench.celltask import CellTask, Work
from diffkit.gradbench import EVALS
from diffkit.gradbench.workloads import instance, names
from diffkit.reporting import gradbench as section
from diffkit.reporting.report import build
from diffkit.reporting.spec import load_spec
from test_cli import console, run


def compared(capsys, name, *argv, fresh=False):
    """The JSON records of ``diffkit compare name argv`` (one repeat), and the exit code;
    ``fresh``: in a new process (JAX cells cannot fork from a worker that has run JAX)."""
    argv = ("compare", name, "--repeat", "1", "--format", "json", *argv)
    if fresh:
        done = console(*argv)
        code, out, err = done.returncode, done.stdout, done.stderr
    else:
        code, out, err = run(capsys, *argv)
    assert "Traceback" not in err
    return code, json.loads(out)


def test_compare_gmm_at_a_size_matches_the_hand_derived_gradient(capsys):
    code, records = compared(capsys, "gmm", "--size", "2_10_1000",
                             "--backends", "forward,reverse,compiled")
    assert code == 0
    p = instance("gmm", "2_10_1000")
    exact = p.exact(p.x)
    for r in records:
        assert (r["status"], r["size"], r["function"]) == ("ok", "2_10_1000", "gmm"), r
        assert r["reference_method"] == "hand-derived gradient"
        assert np.allclose(r["derivative"], exact, rtol=1e-11, atol=0)
        assert r["error"] < 1e-12 and r["time_s"] > 0 and r["peak_bytes"] > 0


@pytest.mark.parametrize("name", names())
def test_every_eval_compares_at_its_smallest_size(capsys, name):
    code, records = compared(capsys, name, "--backends", "reverse")
    p = instance(name)
    assert code == 0 and records[0]["size"] == EVALS[name].sizes[0]
    assert np.allclose(records[0]["derivative"], p.exact(p.x), rtol=1e-10, atol=1e-12)


def test_the_table_names_the_size_the_reference_and_the_columns(capsys):
    code, out, _ = run(capsys, "compare", "det", "--size", "6", "--backends",
                       "numeric,reverse", "--repeat", "1")
    assert code == 0
    assert out.startswith("det 6 (GradBench's input): gradient in 36 parameters; other sizes")
    head = next(line for line in out.splitlines() if line.startswith("backend"))
    assert head.split()[:6] == ["backend", "status", "derivative", "error", "setup", "per"]
    assert "the eval's gradient derived by hand" in out


def test_a_method_that_cannot_finish_says_why(capsys):
    code, records = compared(capsys, "gmm", "--backends", "symbolic", "--timeout", "1")
    assert code == 1 and records[0]["status"] == "timeout"
    assert records[0]["message"] == "no result within 1 s"


def test_list_shows_the_evals_as_a_family(capsys):
    code, out, _ = run(capsys, "list", "functions", "--format", "json")
    rows = [r for r in json.loads(out) if r["group"] == "GradBench evals"]
    assert code == 0 and [r["name"] for r in rows] == names()
    gmm = next(r for r in rows if r["name"] == "gmm")
    assert gmm["dim"] == 30 and "--size 2_5_1000 … 64_100_1000" in gmm["description"]
    code, out, _ = run(capsys, "list", "functions", "--format", "markdown")
    assert "| gmm " in out and "GradBench evals" in out


@pytest.mark.parametrize("argv, says", [
    (["gmm", "--size", "3_3_3"], "unknown size '3_3_3' for gmm; its sizes are 2_5_1000, "
                                 "2_10_1000,"),
    (["rosenbrock", "--size", "10"], "--size applies to GradBench evals only (hello, lse,"),
    (["gmx"], "unknown function 'gmx'; did you mean the GradBench eval gmm?"),
    (["gmm", "--dim", "3"], "--dim and --depth do not apply to GradBench's gmm: choose its "
                            "input with --size"),
    (["det", "--at", "x=[1,2]"], "det 5 takes a vector of 25 parameters, got shape (2,)"),
    (["gmm", "--size", "2_5_1000", "--sparse"], "--size chooses a GradBench eval's input"),
])
def test_bad_input_is_one_line_naming_what_is_allowed(capsys, argv, says):
    code, out, err = run(capsys, "compare", *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert says in err, err


def test_a_cluster_worker_rebuilds_the_eval_at_its_size():
    p = instance("det", "6")
    task = CellTask("det", None, None, None, p.x.tolist(), "grad", "reverse",
                    {"derivative": p.exact(p.x).tolist()}, {"timeout": 60}, 1, None, "6")
    row = Work(task, {"function": "det", "size": "6"})()[0]
    assert row["status"] == "ok" and row["size"] == "6" and row["error"] < 1e-13


@pytest.mark.torch
@pytest.mark.parametrize("name", ["gmm", "llsq", "det", "ode"])
def test_torch_runs_the_evals_on_its_tensors(capsys, name):
    """llsq, det and ode meet numpy data (a basis, signs, a zero start) through diffkit.numpy
    functions, which convert it to the peer's tensors."""
    code, records = compared(capsys, name, "--backends", "torch")
    assert code == 0 and records[0]["status"] == "ok" and records[0]["error"] < 1e-12


@pytest.mark.torch
def test_torch_says_in_one_line_what_a_numpy_operator_on_a_tensor_needs():
    from diffkit.backends.peers.torch import explained

    with pytest.raises(dk.DiffkitError, match=r"write it with diffkit.numpy functions "
                       r"\(dnp.matmul\(A, x\)"):
        explained(lambda z: np.ones((2, 2)) @ z)(dk.backend("torch").lib().ones(2))
    with pytest.raises(dk.DiffkitError, match="the function turns a tensor into a numpy array"):
        explained(lambda z: np.asarray(z.requires_grad_()))(
            dk.backend("torch").lib().ones(2))


@pytest.mark.jax
def test_jax_runs_an_eval_eager_and_jitted(capsys):
    code, records = compared(capsys, "kmeans", "--backends", "jax,jax[jit=true]", fresh=True)
    assert code == 0 and all(r["status"] == "ok" and r["error"] < 1e-12 for r in records)
    assert records[1]["setup_s"] > 0  # the jitted program's compile time, apart
    code, records = compared(capsys, "ode", "--backends", "jax", fresh=True)  # zeros_like of a JAX value
    assert code == 0 and records[0]["status"] == "ok" and records[0]["error"] < 1e-12
    p = instance("kmeans")  # a numpy result: the timed call waited for JAX's computation
    assert type(dk.grad(p.f, backend=dk.backend("jax", jit=True))(p.x)) is np.ndarray


# ---------------------------------------------------------------- the report section

TINY = {"title": "<script>alert(1)</script> GradBench", "figures": [],
        "limits": {"timeout": 30, "memory_mb": 1024, "repeat": 1},
        "gradbench": {"functions": ["hello", "det"], "backends": ["forward", "reverse"]}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("gradbench")
    seen = []
    return out, build(TINY, out, progress=seen.append), seen


def test_the_report_section_is_cells_of_evals_and_methods_kept_for_a_rerun(tiny):
    out, index, seen = tiny
    assert seen == [f"gradbench · {e} · {b}" for e in ("hello", "det")
                    for b in ("forward", "reverse")]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["function"], r["size"]) for r in records} == {("hello", "x=1"), ("det", "5"),
                                                              ("det", "6")}
    assert all(r["figure"] == "gradbench" and r["status"] == "ok" and r["error"] < 1e-12
               for r in records)
    build(TINY, out)  # a rerun measures nothing
    assert len((out / "results.jsonl").read_text().splitlines()) == len(records)
    text = index.read_text()
    assert "<script>alert(1)" not in text and 'id="gradbench-det"' in text
    assert text.count('<img src="data:image/png;base64,') == 2  # a figure per eval
    table = section.markdown([r for r in records if r["function"] == "det"])
    assert table.splitlines()[2].startswith("| det | 6 | ")


def test_the_markdown_table_is_printed_from_the_results(tiny):
    out, _, _ = tiny
    p = subprocess.run([sys.executable, "-m", "diffkit.reporting.gradbench",
                        str(out / "results.jsonl")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[:2] == ["| eval | size | forward | reverse |", "|---|---|---|---|"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (apt)")
def test_the_page_opens_in_a_headless_browser_without_console_errors(tiny):
    _, index, _ = tiny
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", index.as_uri()], capture_output=True, text=True,
                          timeout=180)
    assert 'class="gradbench"' in done.stdout and "hello" in done.stdout
    assert "Uncaught" not in done.stderr and ":ERROR:CONSOLE" not in done.stderr


def test_the_spec_names_evals_and_the_standard_spec_parses():
    spec = load_spec(Path(__file__).resolve().parent.parent / "reports" / "gradbench.toml")
    spec = spec["gradbench"]
    assert spec["functions"] and spec["sizes"] == 2 and "reverse" in spec["backends"]
    with pytest.raises(ValueError, match="unknown GradBench eval 'gmx'; its evals: hello, lse"):
        load_spec({"gradbench": {"functions": ["gmx"]}})
    with pytest.raises(ValueError, match=r"\[gradbench\] sizes"):
        load_spec({"gradbench": {"functions": ["gmm"], "sizes": 0}})
