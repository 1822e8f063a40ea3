"""One run: where runs live in a logdir, whether a run is alive, and `IndexedRun`, the
indexed run with its locks and record-level queries.
"""
