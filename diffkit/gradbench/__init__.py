"""GradBench's evals as diffkit programs, and a GradBench tool speaking its protocol.

`GradBench <https://github.com/gradbench/gradbench>`_ benchmarks automatic differentiation
tools: an *eval* sends JSON messages (``start``, ``define``, ``evaluate``, ``analysis``)
and a *tool* answers each one. Here every eval's functions are written once with
:mod:`diffkit.numpy`, so that one program is differentiated by any backend
(``forward``, ``reverse``, ``compiled``, ``numeric``):

=========  ======================  ====================================================
eval       functions               module
=========  ======================  ====================================================
hello      square, double          :mod:`diffkit.gradbench.hello` (the protocol's smoke test)
lse        primal, gradient        :mod:`diffkit.gradbench.lse`
llsq       primal, gradient        :mod:`diffkit.gradbench.llsq`
gmm        objective, jacobian     :mod:`diffkit.gradbench.gmm`
kmeans     cost, dir               :mod:`diffkit.gradbench.kmeans`
ode        primal, gradient        :mod:`diffkit.gradbench.ode`
det        primal, gradient        :mod:`diffkit.gradbench.det`
lstm       objective, jacobian     :mod:`diffkit.gradbench.lstm` (inputs not GradBench's)
ba         objective, jacobian     :mod:`diffkit.gradbench.ba` (inputs not GradBench's)
ht         objective, jacobian     :mod:`diffkit.gradbench.ht` (inputs not GradBench's)
particle   rr, ff, fr, rf          :mod:`diffkit.gradbench.particle` (nested)
saddle     rr, ff, fr, rf          :mod:`diffkit.gradbench.saddle` (nested)
=========  ======================  ====================================================

Each module also holds GradBench's input generator for its sizes (same procedure and
seed, sizes named as GradBench describes them; ba's and ht's come from ADBench's data
files, so those generate problems of the same shapes and structure, and read a real file)
and a gradient derived by hand in plain numpy, the reference its outputs are validated
against (:meth:`Eval.validate`, at GradBench's tolerance).
``python -m diffkit.gradbench --backend reverse`` is the tool
(:mod:`diffkit.gradbench.protocol`); with ``--eval`` it runs an eval itself.

>>> " ".join(sorted(EVALS))
'ba det gmm hello ht kmeans llsq lse lstm ode particle saddle'
>>> EVALS["gmm"].sizes[:2]
('2_5_1000', '2_10_1000')
"""

from __future__ import annotations

from . import ba, det, gmm, hello, ht, kmeans, llsq, lse, lstm, ode, particle, saddle
from .common import TOLERANCE, Eval, mismatches

EVALS: dict[str, Eval] = {m.EVAL.name: m.EVAL for m in (hello, lse, llsq, gmm, kmeans, ode, det,
                                                        lstm, ba, ht, particle, saddle)}

__all__ = ["EVALS", "Eval", "TOLERANCE", "mismatches"]
