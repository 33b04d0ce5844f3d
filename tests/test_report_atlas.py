"""The accuracy atlas in a report: a cell per function, a summary, a figure and a table per
function, the points left out stated; resumed and rebuilt from results.jsonl."""

import json
import re
import shutil
import subprocess

import pytest

from diffkit.reporting import atlas
from diffkit.reporting.page import page
from diffkit.reporting.report import build
from diffkit.reporting.runner import Runner, plan_of, run_all, sections
from diffkit.reporting.spec import load_spec

SPEC = {  # one catalog cell, and two functions of the atlas at 30 points (a few seconds)
    "title": "atlas",
    "figures": ["accuracy"], "functions": ["exp"], "backends": ["forward"],
    "limits": {"timeout": 30, "memory_mb": 1024, "repeat": 1},
    "atlas": {"functions": ["sigmoid", "log_ndtr"], "points": 30,
              "methods": ["reverse", "forward", "central", "complex"]},
}
LABELS = ["atlas · sigmoid", "atlas · log_ndtr"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas")
    seen = []
    index = build(SPEC, out, progress=seen.append)
    return out, index, seen


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_function_is_one_cell_of_results_jsonl(built):
    out, _, seen = built
    assert plan_of(load_spec(SPEC), "atlas") == LABELS and seen[-2:] == LABELS
    stored = [r for r in lines(out / "results.jsonl") if r.get("sweep") == "atlas"]
    assert [r["cell"] for r in stored] == LABELS
    for r in stored:
        assert r["status"] == "ok" and r["function"] == r["cell"].split(" · ")[1]
        assert [m["key"] for m in r["methods"]] == SPEC["atlas"]["methods"]
        for m in r["methods"]:
            for q, errors in m["ulps"].items():
                assert len(errors) == len(r["x"])
                counted = [e for e in errors if e is not None]
                assert max(counted) == pytest.approx(m[q]["max"], rel=5e-3)
                assert len(errors) - len(counted) == m[q]["excluded"]


def test_the_page_has_the_summary_and_a_figure_and_table_per_function(built):
    out, index, _ = built
    text = index.read_text()
    section = text[text.index('id="atlas"'):]
    summary = section[section.index('<table class="atlas">'):section.index("</table>")]
    assert summary.count("<tr>") == 3 and "diffkit reverse" in summary
    assert "central differences" in summary and "background:#" in summary
    for name in ("sigmoid", "log_ndtr"):
        anchor = atlas.anchor(name)
        assert f'href="#{anchor}"' in summary and f'<h3 id="{anchor}">' in section
        png = (out / f"{anchor}.png").read_bytes()
        assert png[:4] == b"\x89PNG" and int.from_bytes(png[16:20], "big") >= 900
    assert section.count('<img src="data:image/png;base64,') == 2
    assert section.count("<th>method</th><th>value</th><th>first derivative</th>") == 2
    assert re.search(r"30 points\. Left out of the maxima and percentiles, where the exact "
                     r"result is not a normal float .*: \d+ of the values", section)


def test_a_rerun_measures_nothing_and_rebuilds_the_same_page(built):
    out, index, _ = built
    before, page_before = (out / "results.jsonl").read_text(), index.read_text()
    build(SPEC, out)
    assert (out / "results.jsonl").read_text() == before

    def undated(html):
        return re.sub(r"Generated [^.]*\.", "", html)

    assert undated(index.read_text()) == undated(page_before)


def test_a_lost_atlas_cell_is_shown_and_measured_again(tmp_path):
    spec = load_spec({**SPEC, "atlas": {**SPEC["atlas"], "functions": ["expm1"]}})
    Runner(tmp_path / "results.jsonl", spec["limits"])._add({
        "sweep": "atlas", "figure": "atlas", "cell": "atlas · expm1", "status": "lost",
        "message": "worker lost twice"})
    run = Runner(tmp_path / "results.jsonl", spec["limits"])
    run.plan = []
    run_all(spec, run, None)
    assert [job.label for job in run.plan] == ["compare · exp", "atlas · expm1"]
    lost = run_all(spec, Runner(run.path, spec["limits"]), None)  # (measured, serially)
    html = page(spec, {"atlas": [{"cell": "atlas · expm1", "status": "lost",
                                  "message": "worker lost twice"}]}, "cmd", run.path)
    assert "Not measured: lost: worker lost twice" in html
    assert lost["atlas"][0]["status"] == "ok" and sections(spec)[-1] == "atlas"
    assert [r["status"] for r in lines(run.path)].count("lost") == 0


@pytest.mark.parametrize("section, words", [
    ({"functions": ["sigmod"]}, "unknown function 'sigmod'; did you mean sigmoid?"),
    ({"functions": ["exp"], "points": 3}, "points must be an integer of at least 10"),
    ({"functions": ["exp"], "methods": ["quantum"]}, "unknown method 'quantum'"),
    ({"function": "exp"}, "[atlas] takes functions, points, methods and timeout"),
])
def test_atlas_mistakes_are_clear_errors(section, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        load_spec({"atlas": section})


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (apt)")
def test_the_page_opens_in_a_headless_browser_without_console_errors(built, tmp_path):
    out, index, _ = built
    probe = ("<script>window.addEventListener('load', () => document.body.setAttribute("
             "'data-atlas', [...document.querySelectorAll('#atlas ~ figure.plot img')].map("
             "i => i.complete && i.naturalWidth > 0).join(',')));</script>")
    probed = tmp_path / "probe.html"
    probed.write_text(index.read_text().replace("</body>", probe + "</body>"))
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                           "--window-size=1280,900", "--virtual-time-budget=5000",
                           "--enable-logging=stderr", "--v=0", "--dump-dom", probed.as_uri()],
                          capture_output=True, text=True, timeout=180)
    shown = re.search(r'data-atlas="([^"]*)"', done.stdout).group(1).split(",")
    assert shown == ["true", "true"]  # both figures decoded
    assert "Uncaught" not in done.stderr and ":ERROR:CONSOLE" not in done.stderr


@pytest.mark.cluster
def test_atlas_cells_on_two_workers_are_the_serial_ones(tmp_path):
    from diffkit.bench import cluster as cl
    from diffkit.reporting.runner import run_on

    spec = load_spec({**SPEC, "atlas": {**SPEC["atlas"], "functions": ["expm1", "tanh"]}})
    serial = run_all(spec, Runner(tmp_path / "serial.jsonl", spec["limits"]), None)
    with cl.Cluster("local:2") as c:
        clustered = run_on(c, spec, Runner(tmp_path / "cluster.jsonl", spec["limits"]), None)
    keep = ("cell", "function", "status", "x", "methods")
    assert [{k: r[k] for k in keep} for r in clustered["atlas"]] == [
        {k: r[k] for k in keep} for r in serial["atlas"]]
