"""Neural-network building blocks on the reverse tape: modules, losses, initializers.

A model is a tree of :class:`Module` objects whose parameters are ordinary
``dk.tensor(..., requires_grad=True)`` leaves. It can be trained in two styles:

* **tensor style** (PyTorch): ``loss = loss_fn(model(X), y); loss.backward()`` fills
  each parameter's ``.grad``; an optimizer from :mod:`diffkit.optim` then steps.
* **functional style** (JAX / ``torch.func``): the model is a function of its
  parameters, ``functional_call(model, params, X)``, so
  ``dk.value_and_grad(lambda p: loss_fn(functional_call(model, p, X), y))(params)``
  returns a dict of gradients and never touches ``.grad``.

>>> import numpy as np, diffkit as dk
>>> from diffkit import nn
>>> model = nn.Sequential(nn.Linear(2, 3, rng=0), nn.Tanh(), nn.Linear(3, 1, rng=1))
>>> [name for name, _ in model.named_parameters()]
['0.weight', '0.bias', '2.weight', '2.bias']
>>> X, y = np.ones((4, 2)), np.zeros((4, 1))
>>> nn.MSELoss()(model(X), y).backward()          # tensor style: fills .grad
>>> model[0].weight.grad.shape
(3, 2)
>>> loss = lambda p: nn.mse_loss(nn.functional_call(model, p, X), y)
>>> value, grads = dk.value_and_grad(loss)(model.parameters_dict())   # functional style
>>> bool(np.allclose(grads["0.weight"], model[0].weight.grad))
True
"""

from . import init
from .conv import AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, Flatten, MaxPool2d
from .init import (calculate_gain, constant_, kaiming_normal_, kaiming_uniform_, normal_,
                   ones_, uniform_, xavier_normal_, xavier_uniform_, zeros_)
from .losses import (CrossEntropyLoss, HingeEmbeddingLoss, MSELoss, cross_entropy,
                     hinge_embedding_loss, mse_loss)
from .modules import (Dropout, Identity, LayerNorm, Linear, Module, ReLU, Residual, Sequential,
                      Sigmoid, Tanh, functional_call, manual_seed, mlp, ravel_parameters)

__all__ = ["AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "Flatten", "MaxPool2d",
           "CrossEntropyLoss", "Dropout", "HingeEmbeddingLoss", "Identity", "LayerNorm",
           "Linear", "MSELoss", "Module", "ReLU", "Residual", "Sequential", "Sigmoid", "Tanh",
           "calculate_gain", "constant_", "cross_entropy", "functional_call",
           "hinge_embedding_loss", "init", "kaiming_normal_", "kaiming_uniform_", "manual_seed",
           "mlp", "mse_loss", "normal_", "ones_", "ravel_parameters", "uniform_",
           "xavier_normal_", "xavier_uniform_", "zeros_"]
