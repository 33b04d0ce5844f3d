"""What README and docs/ tell a reader holds: every file they name exists, and every
`diffkit …` and `python examples/…` line of README's code blocks exits 0 with the install
README gives for it (a line that needs an extra names it in its comment: `# needs .[cluster]`,
and is skipped here without it). The bench line takes a minute (``-m slow``), each report
line several (``-m soak``: on demand; their sections are tested on small specs)."""
from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXTRAS
from test_cli import console

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TOP = {p.name for p in ROOT.iterdir()}


def named_paths(doc: Path) -> list[str]:
    """Repository paths a document names: backticked tokens that start with a top-level
    folder of the repository (`diffkit/ir/graph.py`, `reports/quick.toml`), and the
    targets of relative Markdown links."""
    found = []
    for m in re.finditer(r"`([^`\s]+)`|\]\(([^)\s#]+)", doc.read_text()):
        raw = m.group(1) or m.group(2)
        token = raw.split(":")[0].rstrip(".,;")
        if "//" in raw or raw.startswith("mailto:") or any(c in token for c in "*{}<>[]$"):
            continue
        if m.group(2) or ("/" in token and token.split("/")[0] in TOP):
            found.append(token)
    return found


def test_every_path_a_doc_names_exists() -> None:
    names = {doc: named_paths(doc) for doc in DOCS}
    assert sum(map(len, names.values())) > 100  # (the docs name many; none found is a bug here)
    missing = [f"{doc.relative_to(ROOT)}: {p}" for doc, paths in names.items() for p in paths
               if not (ROOT / p).exists() and not (doc.parent / p).exists()]
    assert not missing, missing


def readme_lines() -> list[str]:
    """The `diffkit …` and `python examples/…` lines of README's bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.startswith(("diffkit ", "python examples/"))]


def _extra(line: str) -> str | None:
    m = re.search(r"#.*needs \.\[([\w-]+)\]", line)
    return m.group(1) if m else None


MARKS = {"diffkit report": [pytest.mark.soak], "diffkit bench": [pytest.mark.slow]}  # minutes
LINES = [pytest.param(line, marks=next((m for p, m in MARKS.items() if line.startswith(p)), []),
                      id=line.split("#")[0].strip()[:60])
         for line in readme_lines() if "--gallery" not in line]  # (test_gallery.py covers it)


def test_the_readme_has_its_command_lines() -> None:
    assert len(LINES) >= 20, [p.values[0] for p in LINES]


@pytest.mark.parametrize("line", LINES)
def test_readme_line_exits_0(line: str, tmp_path: Path, monkeypatch) -> None:
    extra = _extra(line)
    packages = {"all-peers": ["jax", "torch", "autograd", "numdifftools"]}.get(extra, [extra])
    for name in filter(None, packages):
        if importlib.util.find_spec(EXTRAS.get(name, name)) is None:
            pytest.skip(f"needs {name}: pip install '.[{extra}]'")
    for folder in ("examples", "reports"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(line, comments=True)
    if argv[0] == "python":
        done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return
    # In a fresh process, as a reader runs it: this worker may have imported JAX, which is
    # multithreaded, and a cell forked from it can deadlock (JAX warns of exactly that).
    done = console(*argv[1:], timeout=900)
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 0, f"{line}\n{err[-2000:]}\n{out[-2000:]}"
    assert out or list(tmp_path.rglob("*.png")) or list(tmp_path.rglob("*.html"))
