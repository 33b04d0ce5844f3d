"""Transforms: functions that take a function and return its derivative, in every style.

* :mod:`.functional` — ``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``jacobian``
  (``jacfwd``, ``jacrev``), ``hessian``, ``hvp``, ``derivative``, ``stop_gradient``
  (JAX/MindSpore style), over any backend; ``vmap`` is the batching interpreter's
  (:mod:`diffkit.interpreters.batching`);
* :mod:`.checkpoint` — rematerialization (``checkpoint``, ``checkpoint_loop``: revolve);
* :mod:`.custom` — user rules (``custom_jvp``, ``custom_vjp``, PyTorch's ``Function``);
* :mod:`.record` — tape-scoped gradients (``with dk.record() as tape``, TensorFlow's style);
* :mod:`.weights` — MindSpore's ``weights=``; :mod:`.mode` — ``dk.set_mode``;
* :mod:`.gradcheck` — ``check_grads`` against finite differences;
* :mod:`.control`, :mod:`.loops` — ``cond``, ``switch``, ``scan``, ``fori_loop``,
  ``while_loop`` (JAX's control flow, the same in every backend).
"""

from ..interpreters.batching import vmap
from .functional import (derivative, grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp,
                         stop_gradient, value_and_grad, vjp)

__all__ = ["derivative", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp",
           "stop_gradient", "value_and_grad", "vjp", "vmap"]
