"""Interpreters of the primitive table: each runs a user's function on its own kind of box.

* :mod:`.forward` — dual numbers (value and tangent): forward mode;
* :mod:`.tape`, :mod:`.tensor`, :mod:`.reverse` — the reverse tape, its boxes (with
  PyTorch's ``.backward()``) and the functional reverse sweep;
* :mod:`.batching` — a batch axis carried beside each value (``vmap``);
* :mod:`.symbolic` — SymPy symbols: the closed form and its exact derivative;
* :mod:`.counting` — primitives counted, not computed (the tape length).

The graph tracer, which records instead of computing, is in :mod:`diffkit.ir` with the IR.
Adding an interpreter touches no primitive; adding a primitive touches no interpreter.
"""
