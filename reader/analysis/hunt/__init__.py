"""The hunt: which values went non-finite (alerts, per step), which did harm, the op and
line that made the first harmful one, and where in the model it was made.

Its analyses take a `Run` (`reader.run.run_protocol`) and import nothing else of `reader.analysis`:
`DumpReader`, above them, calls and caches them.
"""
