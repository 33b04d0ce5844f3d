"""The report's "which method" table: advise's recommendation against the measured ranks."""

import math
import shutil
import subprocess
from pathlib import Path

import pytest

from diffkit.bench.harness import read_results
from diffkit.core import DiffkitError
from diffkit.reporting import which
from diffkit.reporting.report import build
from diffkit.reporting.runner import plan
from diffkit.reporting.spec import load_spec

SPEC = {"title": "which", "figures": ["accuracy"], "functions": ["exp"],
        "backends": ["forward"], "limits": {"timeout": 30, "memory_mb": 1024, "repeat": 3},
        "which": {"functions": ["exp", "rosenbrock"]}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("which")
    seen = []
    index = build(SPEC, out, progress=seen.append)
    return out, index, seen


def table(index: Path) -> list[dict[str, str]]:
    """The "which method" table of the page, read back from its HTML."""
    from html.parser import HTMLParser

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.on, self.rows, self.cell = False, [], None

        def handle_starttag(self, tag, attrs):
            if tag == "h2" and ("id", "which") in attrs:
                self.on = True
            elif self.on and tag == "tr":
                self.rows.append([])
            elif self.on and tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if self.on and tag in ("td", "th"):
                self.rows[-1].append(self.cell)
                self.cell = None
            elif self.on and tag == "table":
                self.on = False

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    p = Rows()
    p.feed(index.read_text())
    head, *body = p.rows
    return [dict(zip(head, r)) for r in body]


def test_the_agreement_column_matches_the_measured_ranks(built):
    out, index, seen = built
    assert seen == plan(SPEC) and seen[-2:] == ["which · exp", "which · rosenbrock"]
    records = read_results(out / "results.jsonl")
    advice = {r["function"]: r for r in records if r.get("sweep") == "which"}
    assert set(advice) == {"exp", "rosenbrock"}
    rows = table(index)
    assert [r["function"] for r in rows] == ["exp", "rosenbrock"]
    for row in rows:
        cells = [r for r in records if r.get("function") == row["function"]
                 and "sweep" not in r and r.get("n") is None]
        assert {c["backend"] for c in cells} >= set(which.methods())
        meets = sorted((c for c in cells if c["status"] == "ok" and c["error"] <= 1e-8),
                       key=lambda c: (c.get("setup_s") or 0) / 100 + c["time_s"])
        ranked = [c["backend"] for c in meets]
        rec = advice[row["function"]]["recommended"]
        assert row["recommended"] == rec and row["measured best"] == ranked[0]
        k = ranked.index(rec)  # the recommendation met the target when measured
        assert row["rank"] == f"{k + 1} of {len(ranked)}"
        ratio = ((meets[k].get("setup_s") or 0) / 100 + meets[k]["time_s"]) / (
            (meets[0].get("setup_s") or 0) / 100 + meets[0]["time_s"])
        assert row["agreed"] == ("yes" if k == 0 else "close" if round(ratio, 2) <= 1.5
                                 else "no")
    exp = next(c for c in records if c.get("function") == "exp" and c.get("backend") == "forward"
               and "sweep" not in c)
    assert exp["error"] == 0.0  # d/dx exp = exp, to the last bit
    assert advice["rosenbrock"]["recommended"] in ("reverse", "compiled", "forward")


def test_a_rerun_asks_advise_and_measures_nothing_again(built):
    out, _, _ = built
    before = (out / "results.jsonl").read_text()
    build(SPEC, out)
    assert (out / "results.jsonl").read_text() == before


def test_agreement_follows_the_ranks_of_given_measurements():
    rows = [{"backend": "forward", "status": "ok", "error": 0.0, "time_s": 3e-6},
            {"backend": "compiled", "status": "ok", "error": 0.0, "time_s": 1e-6,
             "setup_s": 1e-4},  # 1e-6 + 1e-4 / 100 = 2e-6 per call
            {"backend": "numeric", "status": "ok", "error": 1e-6, "time_s": 1e-7},
            {"backend": "symbolic", "status": "timeout", "message": "no result within 6 s"}]
    advice = {"function": "f", "recommended": "compiled", "runner_up": "forward"}
    row = which.agreement(advice, rows, 1e-8, 100)
    assert (row["measured best"], row["rank"], row["agreed"]) == ("compiled", "1 of 2", "yes")
    assert math.isclose(row["best cost"], 2e-6)
    row = which.agreement({**advice, "recommended": "forward"}, rows, 1e-8, 100)
    assert (row["rank"], row["time / best"], row["agreed"]) == ("2 of 2", 1.5, "close")
    row = which.agreement({**advice, "recommended": "numeric"}, rows, 1e-8, 100)
    assert row["agreed"] == "no" and "above the target" in row["message"]
    assert row["status"] == "missed"  # the page highlights the row
    row = which.agreement({**advice, "recommended": "symbolic"}, rows, 1e-8, 100)
    assert row["agreed"] == "no" and "timeout" in row["message"]


@pytest.mark.parametrize("section, words", [
    ({"functions": "exp"}, "list of names"), ({"accuracy": 0}, "positive number"),
    ({"calls": 0}, "positive integer"), ({"calls": 1, "n": 3}, "takes functions"),
    ({"functions": ["rosenbrok"]}, "did you mean")])
def test_section_mistakes_are_clear_errors(section, words):
    with pytest.raises(DiffkitError, match=words):
        load_spec({"figures": ["accuracy"], "which": section})


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (apt)")
def test_the_table_renders_in_a_headless_browser(built):
    _, index, _ = built
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                          "--dump-dom", index.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    assert 'id="which"' in dom and "Which method" in dom
    start = dom.index('id="which"')
    section = dom[start:dom.index("</table>", start)]
    assert section.count("<tr") == 3 and "rosenbrock" in section and " of " in section
