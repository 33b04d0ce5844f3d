"""autograd.scipy.stats.norm: diffkit.scipy.stats.norm's functions (scipy's behind them)."""
import scipy.stats as _ss

import diffkit.scipy.stats as _ds

_behind = getattr(_ss, "norm")
globals().update({k: getattr(_behind, k) for k in dir(_behind) if not k.startswith("_")})
_first = getattr(_ds, "norm", None)
if _first is not None:
    globals().update({k: getattr(_first, k) for k in dir(_first) if not k.startswith("_")})
