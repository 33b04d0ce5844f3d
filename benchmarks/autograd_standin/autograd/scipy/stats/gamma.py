"""autograd.scipy.stats.gamma: diffkit.scipy.stats.gamma's functions (scipy's behind them)."""
import scipy.stats as _ss

import diffkit.scipy.stats as _ds

_behind = getattr(_ss, "gamma")
globals().update({k: getattr(_behind, k) for k in dir(_behind) if not k.startswith("_")})
_first = getattr(_ds, "gamma", None)
if _first is not None:
    globals().update({k: getattr(_first, k) for k in dir(_first) if not k.startswith("_")})
