"""Why: the diagnosis of the root cause (its pattern, explanation and fix), the exact
expression, where a non-finite input came from, a healthy run's verdict, and a
tensor's history across steps.

Above `DumpReader`: these analyses ask a run (an `AnalysedRun`) for its cached alerts,
harm, steps and root cause.
"""
