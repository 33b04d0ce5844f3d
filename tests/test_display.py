"""What people see: slide-ready figures, a self-contained report page, and rich displays
in Jupyter (graphs as pictures, derivatives as LaTeX, comparisons as DataFrames)."""

import base64
import re
import struct

import numpy as np
import pytest
from conftest import needs

import diffkit as dk
import diffkit.numpy as dnp
from diffkit.reporting import plots
from diffkit.reporting.figures import DPI
from diffkit.reporting.report import build


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_report_page_embeds_its_figures_and_fits_a_phone(tmp_path):
    spec = {"figures": ["accuracy", "swell"], "functions": ["exp"],
            "swell": {"functions": ["logistic_map"], "depths": "1..2"},
            "limits": {"repeat": 1, "timeout": 30}}
    index = build(spec, tmp_path)
    text = index.read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == 2  # every figure inside the page: no file needed beside it
    width, _ = png_size(base64.b64decode(images[0]))
    assert width >= 6 * DPI  # ≥ 150 dpi: a 6.4-inch figure is 960 px wide
    assert text.count('<div class="scroll"><table') >= 2  # tables scroll on a phone
    assert "overflow-x:auto" in text


def test_figures_show_themselves_in_jupyter_without_matplotlib_inline():
    rows = [{"function": "exp", "backend": "forward", "status": "ok", "error": 1e-16}]
    fig = plots.accuracy_figure(rows)
    width, height = png_size(fig._repr_png_())
    assert width > 300 and height > 150


def test_titles_are_words_and_memory_is_in_megabytes():
    assert plots.words("logistic_map") == "Logistic map"
    rows = [{"function": "nested_sin", "backend": "reverse", "status": "ok", "depth": d,
             "n": 10000, "peak_bytes": d * 2**20, "tape_bytes": d * 2**19} for d in (1, 4)]
    ax = plots.memory_figure(rows).axes[0]
    assert "MB" in ax.get_ylabel()
    assert ax.get_title() == "Nested sin: memory of one derivative vs depth (x of 10,000 entries)"
    assert ax.lines[0].get_ydata().tolist() == [1.0, 4.0]  # MB, not raw bytes


def test_equal_ad_sizes_are_one_visible_line_in_swell():
    rows = [{"function": "logistic_map", "backend": b, "status": "ok", "depth": d,
             "tape_ops": 3 * d} for d in (1, 2) for b in ("reverse", "forward")]
    labels = [line.get_label() for line in plots.swell_figure(rows).axes[0].lines]
    assert "AD: reverse tape = forward trace" in labels and "forward trace" not in labels


def test_exact_reference_lines_are_one_annotated_line_in_steps():
    rows = [{"function": "exp", "method": "central", "step": h, "error": 1e-3 * h / 0.1,
             "auto": False} for h in (0.1, 0.01)]
    refs = [{"function": "exp", "backend": b, "status": "ok", "error": 0.0}
            for b in ("symbolic", "forward", "reverse")]
    ax = plots.step_error_figure(rows, refs).axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "symbolic, forward AD, reverse AD: exact (error 0)" in texts
    assert len(ax.get_legend().get_texts()) <= 6


def test_a_cost_cell_without_a_ratio_draws_no_bar():
    rows = [{"function": "f", "backend": "symbolic", "status": "n/a"},
            {"function": "f", "backend": "reverse", "status": "ok", "cost_ratio": 3.0}]
    ax = plots.cost_figure(rows).axes[0]
    heights = [p.get_height() for p in ax.patches if p.get_height() > 0]
    assert heights == [3.0]
    assert "n/a" in [t.get_text() for t in ax.texts]


def test_graph_displays_as_svg():
    g = dk.graph(lambda a, b: a * b + dnp.sin(a), 1.0, 2.0)
    svg = g._repr_svg_()
    assert "<svg" in svg


def test_derivation_displays_as_latex():
    d = dk.closed_form(lambda x: dnp.sin(x) * x, 1.0, "derivative")
    assert d._repr_latex_() == (r"$$\frac{d}{dx} f = x \cos{\left(x \right)} + "
                                r"\sin{\left(x \right)}$$")


@pytest.mark.notebook
def test_comparison_to_pandas():
    pd = needs("notebook", "pandas")
    result = dk.compare("sin(x)", 1.0, backends=["forward", "reverse"], repeat=1)
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["backend"]) == ["forward", "reverse"]
    np.testing.assert_allclose(frame["derivative"].astype(float), np.cos(1.0), rtol=1e-15)


def test_to_pandas_without_pandas_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kwargs)

    result = dk.compare("sin(x)", 1.0, backends=["forward"], repeat=1)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(dk.DiffkitError, match=r"pip install 'diffkit\[notebook\]'"):
        result.to_pandas()
