"""The compiler: a static graph traced once, differentiated graph-to-graph, optimized and
lowered to numpy code or fused kernels. The pipeline, one module a stage:

* :mod:`.ir` — the IR: typed equations over the primitive table (the tracer that records
  it is an interpreter: :mod:`diffkit.ir.tracer`);
* :mod:`.autodiff` — reverse mode as a graph-to-graph transformation;
* :mod:`.passes` — fold, simplify, CSE, DCE and a buffer plan, each with counts;
* :mod:`.fusion` — elementwise chains grouped into kernels (a fusion plan);
* :mod:`.formulas` — an equation's scalar formula from the lowering registry
  (:mod:`diffkit.primitives.lowering`, beside the primitive table) and its Python spelling;
* :mod:`.codegen` — the graph as Python/numpy source, one line per equation;
* :mod:`.kernel_ir` — each kernel as a small typed program (loads, scalar operations,
  stores, sums, tests on the loop variables), what both renderers read;
* :mod:`.numba_kernels` — the Numba renderer; :mod:`.driver` — the program calling a
  plan's kernels; :mod:`.buffers` — which arrays it keeps and shares; :mod:`.kernel_cache`
  — kernels on disk, by hash;
* :mod:`.llvm_kernels` — the LLVM IR renderer (llvmlite), cached on disk by hash;
* :mod:`.vector_math` — exp, log, log1p and tanh in LLVM IR, so that their loops vectorize;
* :mod:`.scalar_vm` — scalar programs as bytecode for a small compiled virtual machine;
* :mod:`.program` — one compiled program (graph, passes, code, kernels) and how to call it;
* :mod:`.jit` — ``dk.jit`` and ``dk.make_graph``, with the program cache;
* :mod:`.show` — the forward and adjoint programs as readable source (``diffkit show --code``),
  and how a primitive compiles on each target (``diffkit rules NAME``).

The Backend adapter over this package is :mod:`diffkit.backends.compiled`. Nothing is
imported here; no interpreter imports the compiler, and the compiler imports no interpreter.
"""
