"""The comparison machinery: what ``dk.compare`` and ``diffkit compare`` run.

``catalog`` (test functions), ``formula`` and ``targets`` (naming a function), ``reference``
(high-precision derivatives), ``measure`` (accuracy, time, memory, size of one backend on
one function), ``cells`` (each measurement in an isolated process under limits),
``harness`` (the comparison table, resumable JSON Lines) and ``sweeps``.
"""
