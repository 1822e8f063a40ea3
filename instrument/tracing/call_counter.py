"""The call counter: how many eager function calls have completed, read inside graphs.

Every graph trace carries the ordinal of the eager function call it ran in
(instrument/tracing/trace_queue.py): graphs read it from an int64 resource variable that the
callback advances after each call, and the drain maps ordinals to execution indices.

Advancing it is on the path of every call. The eager ``AssignAddVariableOp`` costs
4 us warm and 17-27 us a call in a training loop (each step evicts its code and data
from the caches). Where the variable lives in host memory, `CallCounter.advance` instead
stores the new count into the variable's own buffer (`eager_runtime.host_int64_view`):
a graph's ``ReadVariableOp`` returns that buffer without a copy, so it sees the store.
Three rules keep this exact and safe:

- The variable owns its buffer. An assign shares its value's buffer, and TensorFlow
  caches scalar constants made from Python numbers: stores into a shared buffer would
  change every ``tf.constant(0, tf.int64)`` of the program (Keras' step counters
  among them). One update after the assign copies it (copy-on-write).
- Graph reads are copied at once (`CallCounter.read`): an enqueue keeps its inputs by
  reference, and a read enqueued as is would show the count at drain time.
- Nothing else writes the variable. An ``AssignAdd`` would copy the buffer first (the
  view holds a reference to it) and leave the view behind; so the eager op is the route
  from start to end where there is no view (a GPU keeps the variable in device memory),
  and from the first call an asynchronous executor runs on (the store would precede
  the call's own reads).
"""

from __future__ import annotations

from typing import Any

from instrument.tf_internals import debug_once
from instrument.tf_internals.eager_runtime import executor_is_async, host_int64_view, raw_eager_op


class CallCounter:
    """The run's call counter, a resource variable under a run-unique shared name.

    Graphs capture `handle`; graphs that must not capture an eager handle (control-flow
    gradients) look the same variable up by name with `lookup`.

    Args:
        shared_name: The variable's shared name, unique to the run.
    """

    def __init__(self, shared_name: str) -> None:
        import tensorflow as tf
        from tensorflow.python.ops import gen_resource_variable_ops

        self._attrs = dict(dtype=tf.int64, shape=[], container="", shared_name=shared_name)
        with tf.init_scope():
            self.handle = gen_resource_variable_ops.var_handle_op(
                **self._attrs, name="tfdbg_tui_calls"
            )
            gen_resource_variable_ops.assign_variable_op(
                self.handle, tf.constant(0, dtype=tf.int64)
            )
            # Made once: the eager route runs after every call.
            self._one = tf.constant(1, dtype=tf.int64)
            # The assign shares the buffer of its value, here TensorFlow's cached
            # constant 0 (every int64 zero made from a Python int): an update copies
            # a shared buffer first, so after this one the variable owns its own.
            gen_resource_variable_ops.assign_add_variable_op(
                self.handle, tf.constant(0, dtype=tf.int64)
            )
            self._view = host_int64_view(
                gen_resource_variable_ops.read_variable_op(self.handle, tf.int64)
            )
        self._assign_add = raw_eager_op(
            "AssignAddVariableOp",
            ("dtype", tf.int64.as_datatype_enum),
            gen_resource_variable_ops.assign_add_variable_op,
        )
        self._executor_is_async = executor_is_async()
        if self._view is not None and not self._view_is_the_variable():
            debug_once(
                "call_counter_view",
                "tfdbg-tui: the call counter's variable does not "
                "share its buffer with a read; it advances by an eager op",
            )
            self._view = None

    def _view_is_the_variable(self) -> bool:
        """Whether a store through the view changes the variable and nothing else
        (not the cached constant it was assigned from)."""
        import tensorflow as tf
        from tensorflow.python.ops import gen_resource_variable_ops

        self._view.value += 1
        try:
            read = gen_resource_variable_ops.read_variable_op(self.handle, tf.int64)
            return int(read.numpy()) == 1 and int(tf.constant(0, dtype=tf.int64).numpy()) == 0
        finally:
            self._view.value -= 1

    def advance(self) -> None:
        """Count one completed eager function call; run after each such call."""
        view = self._view
        if view is not None and not self._executor_is_async():
            view.value += 1
            return
        self._view = None
        self._assign_add(self.handle, self._one)

    def lookup(self) -> Any:
        """A ``VarHandleOp`` finding the counter by name, built in the current graph."""
        from tensorflow.python.ops import gen_resource_variable_ops

        return gen_resource_variable_ops.var_handle_op(**self._attrs, name="tfdbg_tui_calls")

    @staticmethod
    def read(handle: Any, shape: Any = ()) -> Any:
        """Build, in the current graph, the count read through ``handle``, filled into
        a new tensor of ``shape`` (a read alone would alias the variable's buffer)."""
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import array_ops, gen_resource_variable_ops

        with ops.control_dependencies(None):
            count = gen_resource_variable_ops.read_variable_op(
                handle, dtypes.int64, name="tfdbg_tui_call_ordinal"
            )
            return array_ops.fill(list(shape), count, name="tfdbg_tui_call_ordinals")
