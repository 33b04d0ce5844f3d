"""The computational graph of a function, drawn after a backward pass.

Each node is one value of the evaluation trace (inputs and primitive results),
labelled with its operation, its value and its gradient (the adjoint ∂f/∂v after the
reverse sweep); each edge goes from an operand to the operation that uses it. With
Graphviz's ``dot`` program on the PATH the picture is laid out by Graphviz; without it
(or with ``engine="matplotlib"``) by a simple layered layout in matplotlib. Both
write PNG, SVG or PDF.

>>> import diffkit as dk, diffkit.numpy as dnp
>>> g = dk.graph(lambda a, b: a * b + dnp.sin(a), 1.0, 2.0)
>>> [n["op"] for n in g.nodes]
['input', 'input', 'mul', 'sin', 'add']

In Jupyter, ``g`` on its own line shows the picture (``_repr_svg_``).
"""

from __future__ import annotations

import html
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .wengert import _fmt, trace


@dataclass
class GraphDrawing:
    """A computational graph to draw: nodes with value and gradient, edges operand → result."""

    nodes: list[dict[str, Any]]     # var, op, value, grad
    edges: list[tuple[str, str]]    # (operand var, result var)

    def label(self, node: dict[str, Any]) -> str:
        return (f"{node['var']} = {node['op']}\nvalue {_fmt(node['value'])}\n"
                f"grad {_fmt(node['grad'])}")

    def dot(self) -> str:
        """Graphviz source (labels escaped)."""
        lines = ["digraph G {", "  rankdir=LR; node [shape=box, fontname=Helvetica];"]
        for n in self.nodes:
            text = html.escape(self.label(n)).replace("\n", "<br/>")
            fill = "lightblue" if n["op"] == "input" else "white"
            lines.append(f'  "{n["var"]}" [label=<{text}>, style=filled, fillcolor={fill}];')
        lines += [f'  "{a}" -> "{b}";' for a, b in self.edges]
        return "\n".join(lines + ["}"])

    def figure(self) -> Any:
        """A matplotlib figure with a layered layout (depth = longest path from inputs),
        on its own Agg canvas (no pyplot: nothing is shown or kept open as a side effect)."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        depth = {n["var"]: 0 for n in self.nodes}
        for a, b in self.edges:  # edges come in evaluation order: one pass suffices
            depth[b] = max(depth[b], depth[a] + 1)
        layers: dict[int, list[str]] = {}
        for n in self.nodes:
            layers.setdefault(depth[n["var"]], []).append(n["var"])
        pos = {v: (d, -i + (len(vs) - 1) / 2) for d, vs in layers.items() for i, v in enumerate(vs)}
        width = max(layers) + 1
        height = max(len(vs) for vs in layers.values())
        fig = Figure(figsize=(2.6 * width + 1, 1.4 * height + 1))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        for a, b in self.edges:
            ax.annotate("", xy=pos[b], xytext=pos[a],
                        arrowprops={"arrowstyle": "->", "color": "0.4", "shrinkA": 34,
                                    "shrinkB": 34})
        for n in self.nodes:
            ax.text(*pos[n["var"]], self.label(n), ha="center", va="center", fontsize=8,
                    bbox={"boxstyle": "round", "fc": "lightblue" if n["op"] == "input"
                          else "white", "ec": "0.3"})
        ax.set_xlim(-0.6, width - 0.4)
        ax.set_ylim(-height / 2 - 0.3, height / 2 + 0.3)
        ax.axis("off")
        ax.set_title("computational graph: value and gradient after backward")
        return fig

    def save(self, path: str | Path, engine: str | None = None) -> str:
        """Write the picture; returns the engine used (``graphviz`` or ``matplotlib``)."""
        path = Path(path)
        fmt = path.suffix.lstrip(".").lower()
        if fmt not in ("png", "svg", "pdf"):
            raise ValueError(f"graph files are .png, .svg or .pdf, not {path.name!r}")
        engine = engine or ("graphviz" if shutil.which("dot") else "matplotlib")
        if engine == "graphviz":
            done = subprocess.run(["dot", f"-T{fmt}", "-o", str(path)], input=self.dot(),
                                  text=True, capture_output=True)
            if done.returncode:
                raise OSError(f"graphviz could not write {path}: "
                              f"{(done.stderr.strip().splitlines() or ['failed'])[-1]}")
        else:
            self.figure().savefig(path, bbox_inches="tight")
        return engine

    def _repr_svg_(self) -> str:
        """Jupyter shows a graph as a picture: Graphviz's SVG, else matplotlib's."""
        if shutil.which("dot"):
            done = subprocess.run(["dot", "-Tsvg"], input=self.dot(), text=True,
                                  capture_output=True)
            if done.returncode == 0:
                return done.stdout
        import io

        buf = io.StringIO()
        self.figure().savefig(buf, format="svg", bbox_inches="tight")
        return buf.getvalue()


def graph(f: Callable[..., Any], *args: Any) -> GraphDrawing:
    """The graph of ``f`` at ``args``, with gradients from a reverse sweep."""
    t = trace(f, *args, mode="reverse")
    nodes = [{"var": r["var"], "op": r["op"], "value": r["value"], "grad": r["adjoint"]}
             for r in t.rows]
    known = {r["var"] for r in t.rows}
    edges = [(src.strip(), r["var"]) for r in t.rows for src in r["inputs"].split(",")
             if src.strip() in known]
    return GraphDrawing(nodes, edges)
