"""Trends: per layer and step, the norms and magnitudes of the run's tensors, their
roles, and the watch rules over them.

Above the hunt (steps, phases, the loss scale's variables), below `DumpReader`, which
caches the trends and hands them to the rules.
"""
