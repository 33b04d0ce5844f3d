"""autograd.numpy.fft: diffkit.numpy.fft, numpy.fft behind it."""
import numpy.fft as _nf

import diffkit.numpy as _dnp

globals().update({k: getattr(_nf, k) for k in dir(_nf) if not k.startswith("__")})
globals().update({k: getattr(_dnp.fft, k) for k in dir(_dnp.fft) if not k.startswith("__")})
