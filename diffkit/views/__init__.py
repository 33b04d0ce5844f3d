"""Teaching views: the evaluation trace as a table (Baydin's Wengert lists), the
computational graph drawn, and the API families side by side (``diffkit styles``)."""
