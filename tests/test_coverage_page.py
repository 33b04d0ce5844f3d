"""docs/numpy-coverage.md is what ``python -m diffkit.nplib.coverage`` prints, and what it
says holds: a differentiable name is differentiated, a value-only one returns no derivative."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import diffkit as dk
import diffkit.numpy as dnp

import scipy

from diffkit.nplib import coverage

PAGE = Path(__file__).resolve().parents[1] / "docs" / "numpy-coverage.md"


def _diffkits_lines(page: str) -> list[str]:
    """The lines that list what diffkit provides (differentiable families, value-only names),
    which do not change with numpy's or SciPy's version, unlike what those libraries add."""
    return [line for line in page.splitlines() if line.startswith(("## ", "- *", "Value only"))]


def test_committed_page_is_what_the_script_prints() -> None:
    committed, printed = PAGE.read_text(), coverage.page()
    stale = ("docs/numpy-coverage.md is stale: regenerate it with "
             "python -m diffkit.nplib.coverage > docs/numpy-coverage.md")
    assert _diffkits_lines(committed) == _diffkits_lines(printed), stale
    if f"(numpy {np.__version__}, SciPy {scipy.__version__})" in committed:
        assert committed == printed, stale  # the same versions: every line


def test_statuses_are_true_of_the_namespace() -> None:
    table = coverage.table()
    assert {"median", "nanvar", "interp", "polyfit", "cross", "copysign"} <= set(
        table["numpy"]["differentiable"])
    assert {"expm", "sqrtm", "solve_triangular", "lstsq"} <= set(table["scipy.linalg"]["differentiable"])
    assert {"isnan", "argmax", "searchsorted"} <= set(table["numpy"]["value only"])
    assert "loadtxt" in table["numpy"]["not numerical"]
    for name in table["numpy"]["differentiable"]:
        assert hasattr(dnp, name), name
    x = np.array([0.5, np.nan, 2.0, -1.0])  # nanmedian: 0.5 (the first entry)
    g = dk.grad(lambda v: dnp.nanmedian(v) + dnp.sum(dnp.where(dnp.isnan(v), 0.0, v)))(x)
    assert g.tolist() == [2.0, 0.0, 1.0, 1.0]
    for namespace, by_status in table.items():  # every name once
        names = [n for names in by_status.values() for n in names]
        assert len(names) == len(set(names)), namespace


ISSUE_27 = {  # what issue 27 names, by namespace
    "numpy": "median quantile percentile nansum nanmean nanmax nanmin nanprod nanstd nanvar "
             "nanmedian cov corrcoef interp trapezoid gradient polyval polyfit polyder meshgrid "
             "broadcast_arrays select piecewise logspace geomspace vander r_ c_ cumulative_sum "
             "cumulative_prod copysign float_power heaviside ldexp acos asin atan acosh asinh "
             "atanh atan2 pow concat permute_dims matrix_transpose vecdot matvec vecmat cross "
             "linspace diff flip convolve correlate",
    "numpy.linalg": "lstsq eig eigvals cond vector_norm matrix_norm cross tensorsolve tensorinv "
                    "pinv det",
    "scipy.linalg": "sqrtm expm solve_triangular lstsq eig solve_sylvester",
}


def test_every_function_the_issue_names_is_differentiable() -> None:
    table = coverage.table()
    for namespace, names in ISSUE_27.items():
        lacking = set(names.split()) - set(table[namespace]["differentiable"])
        assert not lacking, (namespace, sorted(lacking))
