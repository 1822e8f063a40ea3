"""Graph traces inside XLA-compiled functions, through resource variables.

``DebugNumericSummaryV2`` and the trace queue have no XLA kernels, so inside a function
compiled with XLA (``jit_compile=True``, Keras' ``jit_compile``) each traced tensor's
summary row is computed with stock ops XLA compiles (``IsNan``, ``IsInf``, comparisons,
``Sum``, ``Size``, ``Shape``; `raw_rows.xla_row`), exact like the kernels elsewhere,
followed by the call ordinal, and written with ``ResourceScatterUpdate`` into
one row of a float64 variable: a **slot** per traced tensor, in blocks of
`BLOCK_ROWS` rows. Variable updates compile under XLA, and automatic control
dependencies keep them. After each eager function call the callback reads the blocks
on the host (`XlaTracePool.collect`) and writes the rows whose ordinal is that call's
as the call's traces, in slot order (op creation order, which respects data
dependencies).

A slot keeps the last value written in a call: a tensor computed several times in one
call (a loop body's iterations, a function called twice) is recorded once, with its
last value. FULL_TENSOR values are not recorded inside XLA (the callback says so with
a notice).
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from instrument import summaries
from instrument.summaries import raw_rows
from instrument.tf_internals.graph_frames import in_xla_context
from instrument.tracing.trace_queue import TraceQueue, in_control_flow_gradient
from reader import format as fmt

# Rows per pool variable. A block is read whole after each call that ran XLA code:
# 256 rows of at most 17 float64 are 34 KiB.
BLOCK_ROWS = 256


def supports(mode: str) -> bool:
    """Whether tensors inside XLA can be traced in ``mode`` (not FULL_TENSOR)."""
    return mode in summaries.SUMMARY_MODES or mode == fmt.NO_TENSOR


class XlaTracePool:
    """The slots of every traced tensor inside XLA-compiled graphs of one run.

    Args:
        mode: The tensor debug mode (`supports`).
        queue: The run's trace queue, whose call counter the rows carry.
        on_block: Told the eager handle of each block as it is made (graphs capture
            it; it is the dumper's own, not the program's).
    """

    def __init__(
        self, mode: str, queue: TraceQueue, on_block: Callable[[Any], None] = lambda handle: None
    ) -> None:
        self.mode = mode
        self._queue = queue
        self._on_block = on_block
        # Row width: the raw summary (its first column the trace point), then the ordinal.
        self._width = (summaries.RAW_WIDTH[mode] if mode in summaries.SUMMARY_MODES else 1) + 1
        self._lock = threading.Lock()
        self._unique = f"{os.getpid()}_{uuid.uuid4().hex}"
        self._blocks: list[Any] = []  # eager handles
        self._block_attrs: list[dict[str, Any]] = []
        self._slot_trace_points: list[int] = []
        self._lookups: weakref.WeakKeyDictionary[Any, dict[int, Any]] = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        return len(self._slot_trace_points)

    def add_trace(self, tensor: Any, trace_point: int) -> Any:
        """Build, in the XLA graph being constructed, the update of ``tensor``'s slot.

        Returns:
            The update op, or None when the tensor cannot be summarised in XLA (an
            unknown rank in SHAPE mode).
        """
        from tensorflow.python.framework import constant_op, dtypes, ops
        from tensorflow.python.ops import array_ops, gen_resource_variable_ops, math_ops

        graph = tensor.graph
        if self.mode == fmt.SHAPE and tensor.shape.rank is None:
            return None
        block, slot = self._allocate(trace_point)
        # A scope of our own: the user's ops keep the names they would have had.
        with graph.name_scope("tfdbg_tui_xla"):
            with ops.control_dependencies(None):
                row = raw_rows.xla_row(self.mode, tensor, trace_point)
            with ops.control_dependencies([tensor.op] if self.mode == fmt.NO_TENSOR else None):
                ordinal = math_ops.cast(self._queue.call_ordinal_in(graph), dtypes.float64)
                row = array_ops.concat([row, array_ops.reshape(ordinal, [1])], 0)
            return gen_resource_variable_ops.resource_scatter_update(
                self._handle_in(graph, block),
                constant_op.constant([slot], dtype=dtypes.int32),
                array_ops.expand_dims(row, 0),
                name="trace",
            )

    def _allocate(self, trace_point: int) -> tuple[int, int]:
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import array_ops, gen_resource_variable_ops

        with self._lock:
            index = len(self._slot_trace_points)
            self._slot_trace_points.append(trace_point)
            block, slot = divmod(index, BLOCK_ROWS)
            if block == len(self._blocks):
                attrs = {
                    "dtype": dtypes.float64,
                    "shape": [BLOCK_ROWS, self._width],
                    "container": "",
                    "shared_name": f"tfdbg_tui_xla_{self._unique}_{block}",
                }
                with ops.init_scope():
                    handle = gen_resource_variable_ops.var_handle_op(
                        **attrs, name="tfdbg_tui_xla_traces"
                    )
                    # Ordinal -1: no call has written the slot yet.
                    gen_resource_variable_ops.assign_variable_op(
                        handle, array_ops.fill([BLOCK_ROWS, self._width], np.float64(-1.0))
                    )
                self._blocks.append(handle)
                self._block_attrs.append(attrs)
                self._on_block(handle)
            return block, slot

    def _handle_in(self, graph: Any, block: int) -> Any:
        """The block's handle to use in ``graph``: captured, or looked up by shared name
        in control-flow gradient graphs (see `TraceQueue.handles_for`)."""
        if not in_control_flow_gradient(graph):
            return self._blocks[block]
        lookups = self._lookups.setdefault(graph, {})
        if block not in lookups:
            from tensorflow.python.framework import ops
            from tensorflow.python.ops import gen_resource_variable_ops

            with (
                graph.as_default(),
                ops.control_dependencies(None),
                ops.device(self._blocks[block].device),
            ):
                lookups[block] = gen_resource_variable_ops.var_handle_op(
                    **self._block_attrs[block], name="tfdbg_tui_xla_traces"
                )
        return lookups[block]

    def collect(self, ordinal: int) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The traces written during call ``ordinal``: trace points and summary rows
        (the format's columns; None in NO_TENSOR), or None when there are none.

        Runs eager ops: the caller keeps its op callback from recording them.
        """
        from tensorflow.python.framework import dtypes
        from tensorflow.python.ops import gen_resource_variable_ops

        with self._lock:
            blocks = list(self._blocks)
            count = len(self._slot_trace_points)
        if not blocks:
            return None
        rows = np.concatenate(
            [
                gen_resource_variable_ops.read_variable_op(handle, dtypes.float64).numpy()
                for handle in blocks
            ]
        )[:count]
        rows = rows[rows[:, -1] == ordinal]
        if not len(rows):
            return None
        trace_points = rows[:, 0].astype(np.int32)
        if self.mode not in summaries.SUMMARY_MODES:
            return trace_points, None
        return trace_points, summaries.format_rows(self.mode, rows[:, :-1])


def in_while_condition(graph: Any) -> bool:
    """Whether ``graph`` is (or is nested in) a while loop's condition: under XLA a
    condition must compute its predicate and nothing else (its inputs are traced in
    the loop body)."""
    while graph is not None and hasattr(graph, "outer_graph"):
        if type(graph).__name__ == "WhileCondFuncGraph":
            return True
        graph = graph.outer_graph
    return False


def function_name(graph: Any) -> str:
    """The name of the outermost XLA-compiled FuncGraph around ``graph`` (the function
    given ``jit_compile``; its bodies and nested functions are compiled with it)."""

    outer = getattr(graph, "outer_graph", None)
    while outer is not None and hasattr(outer, "outer_graph") and in_xla_context(outer):
        graph, outer = outer, outer.outer_graph
    return str(getattr(graph, "name", None) or "a function")
