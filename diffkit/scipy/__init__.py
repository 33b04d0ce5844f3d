"""SciPy-like namespaces whose functions diffkit differentiates (``diffkit.scipy.special``)."""
