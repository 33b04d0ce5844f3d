"""autograd.scipy.stats.multivariate_normal: diffkit.scipy.stats.multivariate_normal's functions (scipy's behind them)."""
import scipy.stats as _ss

import diffkit.scipy.stats as _ds

_behind = getattr(_ss, "multivariate_normal")
globals().update({k: getattr(_behind, k) for k in dir(_behind) if not k.startswith("_")})
_first = getattr(_ds, "multivariate_normal", None)
if _first is not None:
    globals().update({k: getattr(_first, k) for k in dir(_first) if not k.startswith("_")})
