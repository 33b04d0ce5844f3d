"""Reports: TOML specs → measured cells → matplotlib figures → a self-contained HTML page.

``report`` (specs, runner, HTML), ``plots`` (the standard figures), ``gradient_flow``
(the training experiment), ``recompute`` (memory vs recompute: checkpointing measured).
"""
