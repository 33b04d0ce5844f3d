"""The code blocks of docs/transforms.md, solvers.md, scientific.md, complex.md and
control-flow.md run, each page in order, as one program (their asserts check values
against closed forms)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest


@pytest.mark.parametrize("page", ["transforms.md", "solvers.md", "scientific.md", "complex.md",
                                  "control-flow.md"])
def test_docs_examples_run(page: str) -> None:
    text = (Path(__file__).parent.parent / "docs" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, f"docs/{page}", "exec"), namespace)  # noqa: S102 (our own docs)
