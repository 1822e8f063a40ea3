"""Which route computes a traced tensor's raw summary row (the fused kernels, the stock
route, constants, XLA), and a batch's rows: the stock route's `cond` and its checks
(small tensors' pooled).

One home for the choice of route (docs/instrument.md, "How summaries are computed");
the ops of each row are built by `instrument.summaries.raw_rows`:

- **The fused kernels**: ``DebugNumericSummaryV2`` (TensorFlow's dumper uses it), and
  for FULL_STATS TensorFlow's first summary op, ``DebugNumericSummary``, which already
  counts and takes min, max, mean and variance of the finite elements in float64.
- **The stock route** for large tensors on a CPU in CONCISE_HEALTH, FULL_HEALTH and
  FULL_STATS: the common case (no inf or NaN) by vectorised stock ops, several times
  cheaper per element than those modes' scalar kernel loops. The tensor's sum says
  whether it holds inf or NaN; if one tensor of a batch does, a ``cond`` computes the
  whole batch with the fused kernels instead. In a graph segment's batch, a tensor
  whose NaN or infinity an op is bound to carry into another checked tensor of the
  batch gets no check of its own, and the ``cond`` recomputes it rather than read it
  (instrument/summaries/check_elision.py); there CURT_HEALTH's and CONCISE_HEALTH's rows,
  constants, take this route at every size. Elsewhere (a tensor traced alone)
  CURT_HEALTH keeps its kernel, itself a vectorised any-of: one op, no ``cond``.
- **Constants** (the outputs of ``Const`` ops on a CPU): their rows are computed on the
  host when the graph is built (`instrument.summaries.host_rows`), and cost no op at run time.
- **Stock ops only** (`raw_rows.xla_row`), exact in every case: inside XLA-compiled functions,
  where the kernels have no XLA implementation.

A raw row is float64: column 0 the trace point (``DebugNumericSummaryV2``'s
``tensor_id``), then the mode's columns in one of the forms `raw_rows` lists, which
`instrument.summaries.format_rows` turns into the format's columns on the host (so no
graph op is spent on arithmetic a numpy pass does for a whole batch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from instrument.summaries import check_elision
from instrument.summaries.host_rows import host_row
from instrument.summaries.raw_rows import (
    FORM_COUNTS,
    as_wide,
    exact_row,
    finite_row,
    float64_constant,
    on_gpu,
    shape_row,
)
from instrument.tf_internals import graph_edits
from reader import format as fmt

# Below this many elements (known when the graph is built) a tensor is summarised by
# the fused kernel alone: one op, where the stock route costs about ten, and an op's
# dispatch (~5 us here) outweighs the kernels' extra ~2-8 ns per element.
STOCK_ROUTE_MIN_ELEMENTS = 1 << 14
# Modes whose rows of finite tensors are constants: in a segment's batch they take the
# stock route at every size, so a tensor whose check another covers costs no op.
BATCHED_STOCK_MODES = frozenset({fmt.CURT_HEALTH, fmt.CONCISE_HEALTH})
# A batch with fewer stock rows than this takes the fused kernels for them when their
# kernels are cheap: the checks' stack and the cond cost a batch more than a few
# kernels do. Keras' optimizers cut a training step into segments of a tensor or two
# (at their conds); with a cond each, a Keras fit step cost 0.3 ms more.
MIN_STOCK_ROWS = 4
# A batch sums the elements of its small checked tensors (at most this many each)
# together: one concat and one sum per dtype and device, where a sum each cost an op
# dispatch each. Keras' Adam traces dozens of small tensors a step (per variable: the
# moments, their updates, the step); with a Sum each, a convolutional network's fit
# step paid about as much for them as for reading its large activations.
POOLED_CHECK_MAX_ELEMENTS = 1 << 14


@dataclass(frozen=True)
class TensorSummary:
    """One tensor's summary as built in a graph, before a batch of them is stacked.

    Attributes:
        row: The raw row (float64, `RAW_WIDTH`); final unless ``check`` is set.
        check: With a row of the stock route, which holds only for finite tensors:
            builds the sum of the tensor's elements (float32 or float64), non-finite
            whenever an element is (or, rarely, when the sum overflows: the batch then
            takes the kernels, and stays exact). Built by `stack_summaries` only when
            no other check of the batch covers it (instrument/summaries/check_elision.py).
        exact: Builds the exact row by the fused kernels from the tensor it is given
            (``tensor``, or its recomputation: instrument/summaries/check_elision.py), inside a
            ``cond`` branch taken only when a tensor of the batch is not finite.
        after: An op the row must run after: a row known when the graph is built
            (SHAPE of a static shape) reads nothing of the tensor it describes.
        tensor: The summarised tensor, with ``check``.
        cheap_kernel: With ``check``: the tensor's kernel is as cheap as its stock row
            (CURT_HEALTH's, or a tensor below `STOCK_ROUTE_MIN_ELEMENTS`).
        pooled: With ``check``: the check is the sum of a small tensor's elements
            (at most `POOLED_CHECK_MAX_ELEMENTS`, known when the graph is built), which
            a batch may take together with the other small ones' (`pooled_checks`).
    """

    row: Any
    check: Callable[[], Any] | None = None
    exact: Callable[[Any], Any] | None = None
    after: Any = None
    tensor: Any = None
    cheap_kernel: bool = False
    pooled: bool = False


def tensor_summary(
    mode: str, tensor: Any, trace_point: int, *, batched: bool = False
) -> TensorSummary:
    """Build, in the current graph (or eagerly), the ops that summarise ``tensor``.

    Args:
        mode: A health mode or SHAPE.
        tensor: A floating-point tensor (integer and bool ones too in SHAPE).
        trace_point: Written into the row's column 0.
        batched: The summary goes into a batch of a graph's segment, whose checks cover
            one another: the `BATCHED_STOCK_MODES` then take the stock route at every
            size.
    """
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import math_ops

    def exact(source: Any) -> Any:
        return exact_row(mode, source, trace_point)

    # A scope of our own: the user's ops keep the names they would have had.
    with ops.name_scope("tfdbg_tui_summary"):
        if mode == fmt.SHAPE:
            if not tensor.shape.is_fully_defined():
                return TensorSummary(exact(tensor))
            row = [float(trace_point)] + shape_row(
                float(tensor.dtype.as_datatype_enum), tensor.shape.as_list()
            )
            return TensorSummary(float64_constant(row), after=tensor.op)
        constant = _constant_row(mode, tensor, trace_point)
        if constant is not None:
            return TensorSummary(float64_constant(constant), after=tensor.op)
        batched_stock = batched and mode in BATCHED_STOCK_MODES and not on_gpu(tensor)
        cheap_kernel = mode == fmt.CURT_HEALTH or not _stock_route(tensor)
        if not batched_stock and cheap_kernel:
            return TensorSummary(exact(tensor))
        row, total = finite_row(mode, tensor, trace_point)
        if total is None and tensor.shape.rank == 0:
            # A scalar is its own check: a reduce_sum of it adds a Rank, a Range and a
            # Sum to the graph (Keras' optimizers trace dozens of scalars a step).
            def check() -> Any:
                return as_wide(tensor)
        elif total is None:

            def check() -> Any:
                with ops.name_scope("tfdbg_tui_check"):
                    return math_ops.reduce_sum(as_wide(tensor))
        else:

            def check() -> Any:
                return total

        size = tensor.shape.num_elements()
        pooled = (
            total is None
            and tensor.shape.rank != 0
            and size is not None
            and 0 < size <= POOLED_CHECK_MAX_ELEMENTS
        )
        return TensorSummary(
            row, check, exact, tensor=tensor, cheap_kernel=cheap_kernel, pooled=pooled
        )


def stack_summaries(summaries: list[TensorSummary]) -> Any:
    """The raw rows of a batch, (n, RAW_WIDTH) float64, exact in every case.

    Rows of the stock route are kept when every checked tensor is finite; otherwise a
    ``cond`` recomputes the batch by the fused kernels (one cond per batch: its cost is
    paid once, and non-finite tensors are rare). A batch of fewer than `MIN_STOCK_ROWS`
    stock rows whose kernels are cheap takes the kernels at once, with no cond.
    """
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import array_ops, array_ops_stack, cond, math_ops

    with ops.name_scope("tfdbg_tui_summaries"):
        stock = [s for s in summaries if s.check is not None]
        if stock and len(stock) < MIN_STOCK_ROWS and all(s.cheap_kernel for s in stock):
            summaries = [s if s.check is None else TensorSummary(_kernel_row(s)) for s in summaries]
        covered = check_elision.covered_checks(
            [s.tensor if s.check is not None else None for s in summaries]
        )
        rows = array_ops_stack.stack([s.row for s in summaries], name="rows")
        afters = [s.after for s in summaries if s.after is not None]
        if afters:
            with ops.control_dependencies(afters):
                rows = array_ops.identity(rows)
        kept = [
            s for s, is_covered in zip(summaries, covered) if s.check is not None and not is_covered
        ]
        checks = pooled_checks([s for s in kept if s.pooled])
        for summary in kept:
            if not summary.pooled and summary.check is not None:
                # Where the tensor was placed: the check is built after its graph.
                with ops.device(summary.tensor.device or ""):
                    checks.append(summary.check())
        if not checks:
            return rows
        # One stack per dtype of the sums (float32, float64): no op per tensor.
        by_dtype: dict[Any, list[Any]] = {}
        for check in checks:
            by_dtype.setdefault(check.dtype.base_dtype, []).append(check)
        finite = [
            math_ops.reduce_all(math_ops.is_finite(array_ops_stack.stack(group)))
            for group in by_dtype.values()
        ]
        not_finite = math_ops.logical_not(
            finite[0] if len(finite) == 1 else math_ops.logical_and(*finite)
        )

        def exact_rows() -> Any:
            # A covered tensor is recomputed here rather than read: reading it would
            # cost every step what dropping its check saved.
            recompute = check_elision.Recomputer(
                [s.tensor for s, c in zip(summaries, covered) if c]
            )
            return array_ops_stack.stack(
                [
                    s.row if s.exact is None else s.exact(recompute.tensor(s.tensor))
                    for s in summaries
                ]
            )

        def stock_rows() -> Any:
            return array_ops.identity(rows)

        rows = cond.cond(not_finite, exact_rows, stock_rows, name="tfdbg_tui_exact")
        if len(summaries) > 1 and ops.inside_function():
            # A batch's exact branch holds a kernel for each tensor: lowered, those ops
            # would be visited as dead ones every step.
            if_op = graph_edits.cond_op(rows)
            graph_edits.keep_functional_if(if_op)
            # The If holds its inputs until every check of the batch is done: variables
            # it read are updated after it, in place, rather than copied.
            if if_op is not None:
                graph_edits.defer_variable_writes(if_op, list(if_op.inputs))
        return rows


def pooled_checks(summaries: list[TensorSummary]) -> list[Any]:
    """The checks of small tensors taken together: per device and dtype, the sum of
    all their elements (flattened and concatenated), which is not finite whenever one
    of them holds NaN or infinity (or, rarely, when it overflows: the batch then takes
    the kernels, and stays exact)."""
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import array_ops, math_ops

    if len(summaries) < 2:
        return [s.check() for s in summaries if s.check is not None]
    groups: dict[tuple[str, Any], list[Any]] = {}
    for summary in summaries:
        wide = as_wide(summary.tensor)
        groups.setdefault((summary.tensor.device or "", wide.dtype.base_dtype), []).append(wide)
    checks = []
    with ops.name_scope("tfdbg_tui_check"):
        for (device, _), tensors in groups.items():
            with ops.device(device):
                flat = [array_ops.reshape(t, [-1]) for t in tensors]
                joined = flat[0] if len(flat) == 1 else array_ops.concat(flat, 0)
                checks.append(math_ops.reduce_sum(joined))
    return checks


def _kernel_row(summary: TensorSummary) -> Any:
    """The exact row of a stock summary's tensor, built where the tensor was placed."""
    from tensorflow.python.framework import ops

    exact = summary.exact
    assert exact is not None, "a stock summary (with `check`) has its `exact`"
    with ops.device(summary.tensor.device or ""):
        return exact(summary.tensor)


def summary_row(mode: str, tensor: Any, trace_point: int) -> Any:
    """The raw row of one tensor (graph or eager), exact in every case."""
    from tensorflow.python.framework import ops

    rows = stack_summaries([tensor_summary(mode, tensor, trace_point)])
    with ops.name_scope("tfdbg_tui_summaries"):
        return rows[0]


def _constant_row(mode: str, tensor: Any, trace_point: int) -> list[float] | None:
    """The raw row of a ``Const`` op's output on a CPU, computed now on the host from the
    op's value (its row is the same in every run of the graph); None for other tensors.

    Tensors placed on a GPU keep the device's kernel, which counts subnormals as that
    device does.
    """
    if tensor.op.type != "Const" or on_gpu(tensor):
        return None
    from tensorflow.python.framework import tensor_util

    value = tensor_util.constant_value(tensor)
    if value is None:
        return None
    row = host_row(mode, float(tensor.dtype.as_datatype_enum), np.asarray(value))
    if mode in (fmt.CURT_HEALTH, fmt.CONCISE_HEALTH):
        return [float(trace_point)] + row
    counts = [float(trace_point), FORM_COUNTS] + row[:9]
    if mode == fmt.FULL_HEALTH:
        return counts + row[9:] + [0.0] * 4  # its magnitude, then the unused columns
    # FULL_STATS: the raw row carries m2, the sum of squared deviations, for the std.
    low, high, mean, std = row[9:13]
    finite = row[6] + row[7] + row[8]
    return counts + [low, high, mean, std * std * finite, 0.0]


def _stock_route(tensor: Any) -> bool:
    """Whether ``tensor`` is summarised by the stock route (large, on a CPU)."""
    size = tensor.shape.num_elements()
    if size is not None and size < STOCK_ROUTE_MIN_ELEMENTS:
        return False
    return not on_gpu(tensor)
