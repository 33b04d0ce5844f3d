"""Reports end to end: a spec in; figures, tables, HTML and raw results out; resumable."""

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from diffkit_cli.main import main

from diffkit.reporting import plots
from diffkit.bench.harness import EXTRA, FIELDS
from diffkit.reporting.page import page
from diffkit.reporting.report import build
from diffkit.reporting.runner import plan, plan_of
from diffkit.reporting.spec import FIGURES, load_spec

REPORTS = Path(__file__).resolve().parent.parent / "reports"
HOSTILE = "<script>alert(1)</script>"
TINY = {  # all ten figures on the smallest inputs (a few seconds)
    "title": f"{HOSTILE} tiny report",
    "description": "<b>not bold</b>",
    "functions": ["exp", "babylonian_sqrt"],  # symbolic is n/a on a while loop
    "backends": ["symbolic", "forward", "reverse"],
    "figures": list(FIGURES),
    "limits": {"timeout": 30, "memory_mb": 1024, "repeat": 1},
    "steps": {"functions": ["exp"], "methods": ["central", "complex"]},
    "swell": {"functions": ["logistic_map"], "depths": [1, 2]},
    "scaling": {"function": "rosenbrock", "sizes": [2, 8], "backends": ["forward", "reverse"]},
    "jacobian": {"inputs": [2, 8], "outputs": [1, 4]},
    "memory": {"function": "nested_sin", "size": 100, "depths": [1, 4]},
    "graphmode": {"function": "rosenbrock", "sizes": [2, 8]},
    "coloring": {"sizes": [10, 20], "problems": ["banded", "arrowhead"]},
    "orders": {"function": "exp", "orders": [1, 3], "ways": ["numeric", "taylor"]},
    "solvers": {"functions": ["newton_cubic"], "iterations": [2, 4]},
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    seen = []
    index = build(TINY, out, progress=seen.append)
    return out, index, seen


def run(*argv):
    """The exit code of ``diffkit argv`` run in this process."""
    try:
        main(list(argv))
    except SystemExit as exc:
        return exc.code
    return 0


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_standard_specs_parse_and_quick_draws_the_ten_figures():
    assert load_spec(REPORTS / "quick.toml")["figures"] == list(FIGURES) and len(FIGURES) == 10
    for name in ("accuracy", "swell", "cost", "memory"):
        spec = load_spec(REPORTS / f"{name}.toml")
        assert spec["figures"] and set(spec["figures"]) <= set(FIGURES)


def test_every_figure_is_a_real_image_and_every_link_resolves(tiny):
    out, index, _ = tiny
    assert index == out / "index.html"
    for fig in FIGURES:
        assert (out / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (out / f"{fig}.svg").read_text()[:2000]
    text = index.read_text()
    refs = [r for r in re.findall(r'(?:src|href)="([^"#]+)"', text)
            if not r.startswith("data:image/png;base64,")]  # figures are embedded
    assert text.count('<img src="data:image/png;base64,') == len(FIGURES) + 1  # + solvers
    assert {f"{fig}.svg" for fig in FIGURES} <= set(refs)
    for ref in refs:
        assert (out / ref).is_file(), ref
    for word in ("CPU count", "numpy", "sympy", "diffkit", "python", "diffkit report"):
        assert word in text


def test_the_page_opens_with_what_the_cells_show(tiny):
    _, index, _ = tiny
    text = index.read_text()
    summary = text[text.index('id="summary"'):text.index('id="accuracy"')]
    assert "Accuracy: " in summary and "most accurate on" in summary
    assert "Jacobians (outputs × inputs): reverse mode is faster at" in summary
    assert re.search(r"at depth \d+ of logistic_map the symbolic derivative has", summary)
    assert text.index('id="summary"') < text.index('id="steps"')


SMALLEST_PX = 8 / 72 * 150  # the figures' smallest text (8 pt notes) at 150 dpi, in pixels


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (apt)")
@pytest.mark.parametrize("width", [390, 1280])
def test_figures_stay_readable_in_a_headless_browser(tiny, tmp_path, width):
    """On a phone (390 px) and a laptop (1280 px): every figure is drawn at a scale that
    keeps its smallest text at 9 px or more, the page has no console error, and it
    scrolls sideways only inside a figure."""
    out, index, _ = tiny
    probe = ("<script>window.addEventListener('load', () => document.body.setAttribute("
             "'data-scales', [...document.querySelectorAll('figure.plot img')].map("
             "i => i.clientWidth / i.naturalWidth).join(',') + ';' + "
             "(document.documentElement.scrollWidth <= window.innerWidth)));</script>")
    page = tmp_path / "probe.html"
    page.write_text(index.read_text().replace("</body>", probe + "</body>"))
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           f"--window-size={width},900", "--virtual-time-budget=5000",
                           "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180)
    scales, fits = re.search(r'data-scales="([^"]*)"', done.stdout).group(1).split(";")
    scales = [float(s) for s in scales.split(",")]
    assert len(scales) == len(FIGURES) + 1 and fits == "true"  # + solvers
    assert min(scales) * SMALLEST_PX >= 9.0, scales
    assert "Uncaught" not in done.stderr and ":ERROR:CONSOLE" not in done.stderr


def test_every_figure_is_at_least_a_slide_wide(tiny):
    out, _, _ = tiny
    for fig in FIGURES:
        blob = (out / f"{fig}.png").read_bytes()
        assert int.from_bytes(blob[16:20], "big") >= 900, fig


def test_raw_results_parse_back_with_the_expected_fields(tiny):
    out, _, _ = tiny
    records = lines(out / "results.jsonl")
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(records)
    assert set(FIELDS) | set(EXTRA) | {"sweep"} <= set(rows[0])
    units = ("coloring", "orders", "solvers")  # every measurement a report makes is a cell
    assert {r["sweep"] for r in rows} == {"cell", "steps", "swell", *units}
    stored = {(r["sweep"], r["cell"]) for r in records if "cell" in r}  # one a progress label
    assert stored == {(fig, label) for fig in units for label in plan_of(load_spec(TINY), fig)}
    cells = [r for r in records if "sweep" not in r]
    assert all(r["function"] and r["backend"] and r["status"] for r in cells)
    by = {(r["function"], r["backend"]): r for r in cells if r.get("n") is None}
    assert by[("exp", "forward")]["error"] == 0.0 and by[("exp", "forward")]["time_s"] > 0
    assert by[("babylonian_sqrt", "symbolic")]["status"] == "n/a"
    assert {r["m"] for r in cells if "m" in r} == {1, 4}


def test_user_text_is_escaped_and_failed_cells_show_their_status(tiny):
    out, index, _ = tiny
    text = index.read_text()
    assert HOSTILE not in text and "<b>not bold" not in text
    assert html_escaped(HOSTILE) in text
    assert "<td>n/a</td>" in text  # symbolic on babylonian_sqrt
    row = {"function": HOSTILE, "backend": "forward", "status": "error",
           "message": f"ValueError: {HOSTILE}"}
    spec = load_spec({"title": HOSTILE, "figures": ["accuracy"], "functions": ["exp"]})
    html = page(spec, {"accuracy": [row]}, f"diffkit report {HOSTILE}", out / "results.jsonl")
    assert "<script" not in html and html.count(html_escaped(HOSTILE)) >= 3


def html_escaped(text):
    import html

    return html.escape(text)


def test_progress_follows_the_plan(tiny):
    _, _, seen = tiny
    assert seen == plan(TINY) and len(seen) > 20


def test_a_rerun_resumes_without_measuring_again(tiny):
    out, _, _ = tiny
    before = (out / "results.jsonl").read_text()
    seen = []
    build(TINY, out, progress=seen.append)
    assert (out / "results.jsonl").read_text() == before  # nothing appended
    assert seen == plan(TINY)


def test_a_report_with_failing_cells_still_builds(tmp_path):
    spec = {"title": "too little time", "figures": ["accuracy", "scaling", "memory"],
            "functions": ["exp"], "backends": ["forward"], "limits": {"timeout": 0.05},
            "scaling": {"sizes": [2, 4]},
            "memory": {"size": 10, "depths": [1, 2], "backends": ["reverse"]}}
    index = build(spec, tmp_path)
    text = index.read_text()
    assert "<td>timeout</td>" in text and "<td>skipped</td>" in text
    records = lines(tmp_path / "results.jsonl")
    assert records and all(r["status"] == "timeout" for r in records)
    for fig in spec["figures"]:
        assert (tmp_path / f"{fig}.png").stat().st_size > 1000


@pytest.mark.parametrize("draw, rows", [
    (plots.accuracy_figure, [{"function": "f", "backend": "forward", "status": "oom"}]),
    (plots.cost_figure, [{"function": "f", "backend": "reverse", "status": "timeout"}]),
    (plots.scaling_figure, [{"function": "f", "backend": "reverse", "n": 4,
                             "status": "error"}]),
    (plots.memory_figure, [{"function": "f", "backend": "reverse", "depth": 2,
                            "status": "oom"}]),
    (plots.jacobian_figure, [{"function": "g", "backend": "forward", "n": 2, "m": 1,
                              "status": "timeout"}]),
    (plots.swell_figure, [{"function": "f", "backend": "symbolic", "depth": 3,
                           "status": "timeout"}]),
    (plots.step_error_figure, [{"function": "f", "method": "central", "status": "error",
                                "message": "boom"}]),
])
def test_each_figure_draws_even_when_every_cell_failed(draw, rows, tmp_path):
    fig = draw(rows)
    fig.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("spec, words", [
    ({"figures": ["plots"]}, "unknown figure 'plots'"),
    ({"limits": {"timeout": -1}}, "timeout must be a positive number"),
    ({"figures": ["swell"], "swell": {"functions": ["exp"]}}, "exp has no depth"),
    ({"functions": ["no_such_function"], "figures": ["accuracy"]}, "unknown catalog function"),
    ({"backends": ["quantum"]}, "unknown backend 'quantum'"),
    ({"colour": "red"}, "unknown key 'colour'"),
])
def test_spec_mistakes_are_clear_errors(spec, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        load_spec(spec)


def test_the_command_writes_the_report_and_reports_mistakes_in_one_line(tmp_path, capsys,
                                                                         monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")  # the command sets them; keep this process unchanged
    spec = tmp_path / "mini.toml"
    spec.write_text('title = "mini"\nfigures = ["accuracy"]\nfunctions = ["exp"]\n'
                    'backends = ["forward"]\n[limits]\nrepeat = 1\n')
    out = tmp_path / "out"
    assert run("report", str(spec), "-o", str(out), "--quiet") == 0
    assert capsys.readouterr().out.strip() == str(out / "index.html")
    assert (out / "accuracy.png").is_file() and (out / "spec.toml").is_file()
    assert load_spec(out / "spec.toml")["functions"] == ["exp"]  # the copy loads back

    spec.write_text('figures = ["nope"]\n')
    code = run("report", str(spec), "-o", str(out))
    err = capsys.readouterr().err
    assert code == 2 and "unknown figure 'nope'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


GRADIENT_FLOW = {  # the smallest training experiment: one network, depth 3
    "experiment": "gradient_flow",
    "setup": {"seed": 0, "width": 4, "batch": 32, "noise": 0.1, "seeds": 1},
    "figure": [
        {"name": "profile", "kind": "layer_profile", "title": "t", "caption": "c {width}",
         "depth": 3, "panels": "architecture", "lines": "activation", "activations": ["tanh"],
         "architectures": ["plain"], "inits": ["default"]},
        {"name": "sweep", "kind": "depth_sweep", "title": "t", "caption": "c", "depths": [2, 3],
         "panels": "architecture", "lines": "activation", "activations": ["tanh"],
         "architectures": ["plain"], "inits": ["default"]},
    ],
}


def test_a_spec_runs_the_experiment_it_declares(tmp_path):
    out = build(GRADIENT_FLOW, tmp_path)
    assert out == tmp_path / "index.html" and "c 4" in (tmp_path / "captions.md").read_text()
    page = out.read_text()
    assert "What the experiment shows" in page and "gradient norm is" in page  # from the numbers
    assert page.count("data:image/png;base64,") == 2
    assert (tmp_path / "profile.png").is_file() and (tmp_path / "sweep.png").is_file()
    got = json.loads((tmp_path / "gradients.json").read_text())
    norms = got["profile"]["plain/tanh"]  # ||dL/dW_l|| of the 4 Linear layers
    assert len(norms) == 4 and all(n > 0 for n in norms)
    # the sweep's ratio at depth 3 is the same network's first / last layer norm
    assert got["sweep"]["plain/tanh"]["3"] == pytest.approx(norms[0] / norms[-1], rel=1e-12)
    with pytest.raises(ValueError, match="unknown experiment 'alchemy'; experiments: gradient_flow"):
        build({"experiment": "alchemy"}, tmp_path)
    bad = {**GRADIENT_FLOW, "figure": [{**GRADIENT_FLOW["figure"][0], "architectures": ["moebius"]}]}
    with pytest.raises(ValueError, match="unknown architecture 'moebius'; use one of plain"):
        build(bad, tmp_path)


def test_the_jacobian_figure_measures_the_catalogs_tanh_ax():
    import numpy as np

    from diffkit import jacobian
    from diffkit.bench import catalog
    from diffkit.bench.targets import tanh_ax

    t = tanh_ax(3, 4)
    f, x = catalog.get("tanh_ax").make(n=4)
    np.testing.assert_array_equal(t.x, x)
    np.testing.assert_array_equal(t.f(x), f(x))
    A = np.random.default_rng(0).normal(size=(3, 4)) / 2.0  # fixed seed, scaled by 1/sqrt(n)
    expected = (1.0 - np.tanh(A @ x) ** 2)[:, None] * A  # d tanh(Ax)/dx = diag(1 - tanh²) A
    np.testing.assert_allclose(jacobian(t.f, backend="reverse")(t.x), expected, rtol=1e-13)


def test_verbose_says_where_the_time_went(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('figures = ["accuracy"]\nfunctions = ["exp"]\nbackends = ["forward"]\n'
                    '[which]\nfunctions = []\n')
    assert run("report", str(spec), "-o", str(tmp_path / "out"), "--quiet", "--verbose") == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(r"report: [\d.]+ s: cells and figures [\d.]+ s; the page [\d.]+ s", line)
