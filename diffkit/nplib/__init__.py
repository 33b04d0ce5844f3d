"""The larger part of :mod:`diffkit.numpy`, one module per family (elementwise math,
statistics, shaping, contractions, linear algebra, FFT). Users import ``diffkit.numpy``;
these modules build on its basic functions (``sum``, ``reshape``, ``getitem`` ...)."""
