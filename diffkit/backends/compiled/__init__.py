"""The compiled backend: static graphs (trace once, differentiate the graph, optimize,
generate readable numpy code).

* :mod:`.graph` — the IR (typed equations over the primitive table) and its tracer;
* :mod:`.autodiff` — reverse mode as a graph-to-graph transformation;
* :mod:`.passes` — fold, simplify, CSE, DCE and a buffer plan, each with counts;
* :mod:`.codegen` — the graph as Python/numpy source, one line per equation;
* :mod:`.program` / :mod:`.jit` / :mod:`.backend` — building, caching, entry points.
"""

from .backend import CompiledBackend
from .graph import Graph
from .jit import jit, make_graph

__all__ = ["CompiledBackend", "Graph", "jit", "make_graph"]
