"""What a run means: alerts, steps, root cause, inputs, history, diagnosis, diff, and
`DumpReader`, the run with its cached analyses.
"""
