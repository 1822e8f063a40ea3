"""Recording a running program: the op callback, stacks, graph traces through the trace
queue (batches, call counter, XLA, TF1 graphs), and the callback in every thread.
"""
