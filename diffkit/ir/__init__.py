"""The graph IR, the tracer that records it and the evaluator that replays it.

* :mod:`.graph` — the IR: typed equations ``v3 = mul(v1, v2)`` over the primitive table
  (:class:`~.graph.Graph`, :class:`~.graph.Eqn`, :class:`~.graph.Var`, :class:`~.graph.Const`);
* :mod:`.tracer` — an interpreter of the table that records instead of computing (abstract
  values with a shape and a dtype), and :func:`~.tracer.evaluate` / :func:`~.tracer.replay`,
  which run a graph's equations through ``bind`` again at any level.

The compiler (:mod:`diffkit.compiler`) takes graphs from here; this package imports
nothing of the compiler, the interpreters or the backends.
"""
