"""The API reference (docs/api, Sphinx autodoc over the docstrings) builds with warnings
as errors, and every public name of ``diffkit`` has an entry in it.

Needs the ``docs`` extra (sphinx): pip install '.[docs]'.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

DOCS = Path(__file__).parents[1] / "docs" / "api"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    needs("docs")
    out = tmp_path_factory.mktemp("api")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "--keep-going", "-b",
                           "html", str(DOCS), str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.docs
def test_every_public_name_has_an_entry(site):
    import diffkit

    ids = set()
    for page in site.glob("*.html"):
        ids |= set(re.findall(r'id="((?:module-)?diffkit[\w.]*)"', page.read_text()))
    short = {i.removeprefix("module-").rsplit(".", 1)[-1] for i in ids}
    missing = [name for name in diffkit.__all__ if name not in short]
    assert not missing, f"no API entry for {missing}: add them to a page in docs/api"


@pytest.mark.docs
def test_the_expression_api_and_training_are_documented_member_by_member(site):
    numpy_page = (site / "numpy.html").read_text()
    for name in ("diffkit.numpy.where", "diffkit.numpy.sum", "diffkit.numpy.concatenate"):
        assert f'id="{name}"' in numpy_page
    assert 'id="diffkit.optim.Adam"' in (site / "training.html").read_text()


@pytest.mark.docs
def test_the_transforms_page_holds_every_transform_with_described_parameters(site):
    page = (site / "transforms.html").read_text()
    for name in ("grad", "value_and_grad", "jvp", "vjp", "jacobian", "hessian", "derivative",
                 "vmap", "checkpoint", "custom_jvp"):
        assert f'id="diffkit.{name}"' in page, name
    start = page.index('id="diffkit.grad"')
    entry = page[start:page.index('id="diffkit.jvp"')]
    assert "Parameters" in entry and "The differentiated positional arguments" in entry
    assert "compiled[fuse=false]" in entry  # the backend parameter's description
