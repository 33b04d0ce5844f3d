"""The README gallery (reports/gallery) is what the code produces today: made from
reports/quick.toml by ``diffkit report reports/quick.toml -o reports/gallery --gallery``,
which also writes gallery.json. This test fails when the spec's sweeps (functions,
sizes, backends), a figure's legends or its size no longer match what the gallery shows:
then regenerate it with that one command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diffkit.reporting.figures import draw
from diffkit.reporting.report import legends
from diffkit.reporting.runner import plan_of
from diffkit.reporting.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "reports" / "gallery"
SPEC = load_spec(ROOT / "reports" / "quick.toml")
NUMBERS = json.loads((GALLERY / "gallery.json").read_text())


def test_the_gallery_has_every_figure_of_the_quick_report():
    assert list(NUMBERS["figures"]) == SPEC["figures"] + ["solvers"] * bool(
        SPEC["solvers"]["functions"])


def test_the_solvers_figure_was_measured_and_drawn_as_today():
    from diffkit.reporting import solvers

    shown = NUMBERS["figures"].get("solvers")
    if not SPEC["solvers"]["functions"]:
        assert shown is None
        return
    assert shown["plan"] == SPEC["solvers"]
    assert legends(solvers.figure(NUMBERS["records"]["solvers"])) == shown["legends"]
    assert shown["width"] >= 900


@pytest.mark.parametrize("fig", SPEC["figures"])
def test_each_figure_was_measured_on_todays_sweep(fig):
    assert NUMBERS["figures"][fig]["plan"] == plan_of(SPEC, fig)  # functions, sizes, backends


@pytest.mark.parametrize("fig", SPEC["figures"])
def test_each_figure_is_drawn_as_todays_code_draws_it(fig):
    pytest.importorskip("matplotlib")
    shown = NUMBERS["figures"][fig]
    assert legends(draw(fig, NUMBERS["records"][fig], SPEC[fig])) == shown["legends"]
    png = (GALLERY / f"{fig}.png").read_bytes()
    width = int.from_bytes(png[16:20], "big")
    assert width == shown["width"] and width >= 900
