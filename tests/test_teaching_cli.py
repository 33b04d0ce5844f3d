"""Teaching views from the command line and the library: trace, graph, rules, show."""

import json
import shutil

import numpy as np
import pytest

import diffkit as dk
import diffkit.numpy as dnp
from test_cli import run

PNG = b"\x89PNG\r\n\x1a\n"


def test_trace_command_reverse_json(capsys):
    code, out, _ = run(capsys, "trace", "log(x1) + x1*x2 - sin(x2)", "--at", "x1=2,x2=5",
                       "--mode", "reverse", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    x1 = [r for r in rows if r.get("var") == "v-1"][0]
    assert x1["adjoint"] == pytest.approx(5.5)


@pytest.mark.parametrize("engine", ["matplotlib", "graphviz"])
def test_graph_renders_with_each_engine(tmp_path, engine):
    if engine == "graphviz" and not shutil.which("dot"):
        pytest.skip("Graphviz's dot is not installed")
    g = dk.graph(lambda a, b: a * b + dnp.sin(a), 1.0, 2.0)
    grads = {n["var"]: float(n["grad"]) for n in g.nodes}
    assert grads["v-1"] == pytest.approx(2.0 + np.cos(1.0)) and grads["v0"] == 1.0
    assert ("v-1", "v1") in g.edges and ("v0", "v1") in g.edges
    png, svg = tmp_path / "g.png", tmp_path / "g.svg"
    assert g.save(png, engine) == engine and png.read_bytes().startswith(PNG)
    g.save(svg, engine)
    assert "<svg" in svg.read_text()


def test_graph_command_and_escaping(capsys, tmp_path):
    out = tmp_path / "graph.png"
    code, text, _ = run(capsys, "graph", "x1*x2 + x1", "--at", "x1=3,x2=4", "-o", str(out),
                        "--engine", "matplotlib")
    assert code == 0 and out.read_bytes().startswith(PNG) and "4 nodes" in text
    code, _, err = run(capsys, "graph", "x1*x2", "-o", str(tmp_path / "g.gif"))
    assert code == 2 and ".png, .svg or .pdf" in err
    dot = dk.graph(lambda a: a * 2.0, 1.0).dot()
    assert "<br/>" in dot and "&" not in dot.replace("&lt;", "").replace("&gt;", "")


def test_rules_and_show(capsys):
    code, out, _ = run(capsys, "rules", "sin")
    assert code == 0 and "lambda y, x: cos(x)" in out and "sp.sin(x)" in out
    assert "y_dot = cos(x) * x_dot" in out and "x_bar += y_bar * cos(x)" in out  # each mode
    assert "saves for the reverse sweep: its input x" in out
    code, out, _ = run(capsys, "rules", "tan")  # a sum as a factor keeps its parentheses
    assert "y_dot = (1.0 + y * y) * x_dot" in out and "x_bar += y_bar * (1.0 + y * y)" in out
    code, out, _ = run(capsys, "rules", "tanh")  # a helper the derivative calls is shown
    assert "x_bar += y_bar * _dtanh(x, y)" in out and "def _dtanh(x: Any, y: Any)" in out
    code, out, _ = run(capsys, "rules", "exp")
    assert "y_dot = y * x_dot" in out and "saves for the reverse sweep: its output y" in out
    code, out, _ = run(capsys, "rules", "mul")
    assert "x_dot * y" in out and "z_bar * y" in out
    code, _, err = run(capsys, "rules", "sn")
    assert code == 2 and "did you mean sin" in err
    code, out, _ = run(capsys, "rules", "--list")
    assert code == 0 and "linear algebra: adjugate, cholesky, det, eigh" in out and "contraction: einsum" in out
    assert "linalg (dnp.linalg): cholesky" in out and "statistics: amax, amin, average" in out
    code, out, _ = run(capsys, "show", "x^2 * sin(x)", "--at", "x=1")
    assert code == 0 and "x**2*cos(x) + 2*x*sin(x)" in out and "\\cos" in out
    assert "richardson" in out and "2.22324427548" in out


def test_show_code_prints_the_readable_program_and_the_buffer_plan_on_request(capsys):
    code, out, _ = run(capsys, "show", "--code", "rosenbrock", "--dim", "4")
    assert code == 0 and "out=" not in out and "Table 3" in out and "Table 2" not in out
    assert "one array per equation" in out and "    x_bar = v14 + v15" in out
    code, out, _ = run(capsys, "show", "--code", "rosenbrock", "--dim", "4", "--optimized")
    assert code == 0 and "out=" in out and "buffers reused: 200 bytes" in out
    code, _, err = run(capsys, "show", "sin(x)", "--optimized")
    assert code == 2 and "--optimized goes with --code" in err
