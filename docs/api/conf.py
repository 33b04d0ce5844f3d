"""Sphinx configuration of the API reference (built from the docstrings).

    pip install '.[docs]' && sphinx-build -W -b html docs/api site/api

tests/test_api_docs.py builds it with warnings as errors (-W).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

project = "diffkit"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]  # numpydoc sections
napoleon_google_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
exclude_patterns = ["_build"]
suppress_warnings = ["ref.python"]  # names in type hints that have no page of their own


def _skip_numpy_reexports(app, what, name, obj, skip, options):
    """numpy's own functions that diffkit.numpy re-exports as they are (arange, zeros, …)
    are numpy's to document."""
    module = getattr(obj, "__module__", None) or ""
    return True if module == "numpy" or module.startswith("numpy.") else None


def setup(app):
    app.connect("autodoc-skip-member", _skip_numpy_reexports)


def _write_more_page() -> None:
    """more.rst: every public name of diffkit that no other page documents yet."""
    import inspect
    import re

    import diffkit

    here = Path(__file__).parent
    done = set()
    for page in here.glob("*.rst"):
        if page.name != "more.rst":
            done |= set(re.findall(r"diffkit\.(\w+)\s*$", page.read_text(), re.M))
    lines = ["More of the public API", "======================", ""]
    for name in diffkit.__all__:
        obj = getattr(diffkit, name)
        if name in done or inspect.ismodule(obj):
            continue
        kind = "autoclass" if inspect.isclass(obj) else "autofunction" if callable(obj) \
            else "autodata"
        lines.append(f".. {kind}:: diffkit.{name}")
    (here / "more.rst").write_text("\n".join(lines) + "\n")


_write_more_page()
