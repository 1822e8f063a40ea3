"""The columnar indexes of a run: segment files read incrementally, executions and traces
in numpy columns, definitions, and trace search over them.
"""
