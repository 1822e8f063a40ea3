"""The TensorFlow ops that compute a traced tensor's raw summary row.

One home for every route (docs/instrument.md, "How summaries are computed"):

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
- **Stock ops only** (`xla_row`), exact in every case: inside XLA-compiled functions,
  where the kernels have no XLA implementation.

A raw row is float64: column 0 the trace point (``DebugNumericSummaryV2``'s
``tensor_id``), then the mode's columns in one of the forms below, which
`instrument.summaries.format_rows` turns into the format's columns on the host (so no
graph op is spent on arithmetic a numpy pass does for a whole batch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from instrument.summaries import check_elision
from instrument.summaries.host_rows import host_row
from instrument.summaries.magnitudes import largest_magnitude
from instrument.tf_internals import graph_edits
from reader import format as fmt

# DebugNumericSummaryV2's `tensor_debug_mode` attribute: TensorFlow's enum.
TENSOR_DEBUG_MODE_ENUM = fmt.TF_TENSOR_DEBUG_MODE_ENUM

# Column 1 of a FULL_HEALTH or FULL_STATS raw row says how the rest is laid out:
# FORM_COUNTS: DebugNumericSummaryV2's FULL_HEALTH row (its -1 there is the device
#   type; XLA rows write 0): dtype, rank, size, neg_inf, pos_inf, nan, neg, zero, pos;
#   FULL_STATS then min, max, mean of the finite elements and m2, the sum of their
#   squared deviations from the mean, and one unused column.
# FORM_SIGN_SUMS (the stock route, all elements finite): the same, but in place of
#   neg and zero the sums S of sign(x) and A of |sign(x)|: neg = (A - S) / 2,
#   zero = size - A, pos = (A + S) / 2.
# FORM_V1 (FULL_STATS only): DebugNumericSummary's first 14 columns: initialized,
#   size, nan, neg_inf, neg, zero, pos, pos_inf, min, max, mean, variance, dtype, rank.
# FULL_HEALTH raw rows are as wide as FULL_STATS' and carry the tensor's magnitude, the
# format's `max_abs`: FORM_V1 rows (a small tensor on a CPU, by DebugNumericSummary in
# one op, whose min and max give it) or FORM_COUNTS and FORM_SIGN_SUMS rows with the
# largest |x| in column 11 (NaN on the stock route, where it would cost a pass over a
# large tensor: a third more FULL_HEALTH overhead on a convolutional fit), then four
# unused zeros.
FORM_COUNTS = -1.0
FORM_SIGN_SUMS = 1.0
FORM_V1 = 2.0
# Width of a raw row (its trace point column included), per mode.
RAW_WIDTH = {
    fmt.CURT_HEALTH: 2,
    fmt.CONCISE_HEALTH: 5,
    fmt.FULL_HEALTH: 16,
    fmt.FULL_STATS: 16,
    fmt.SHAPE: 10,
}

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
# Sums of signs are exact in float32 while no partial sum can pass 2**24; past that
# (or when the size is only known at run time) they are taken in float64.
FLOAT32_EXACT_COUNT = 1 << 24


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


def tensor_summary(mode: str, tensor: Any, trace_point: int, *,
                   batched: bool = False) -> TensorSummary:
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
            row = [float(trace_point)] + shape_row(float(tensor.dtype.as_datatype_enum),
                                                   tensor.shape.as_list())
            return TensorSummary(_const(row), after=tensor.op)
        constant = _constant_row(mode, tensor, trace_point)
        if constant is not None:
            return TensorSummary(_const(constant), after=tensor.op)
        batched_stock = batched and mode in BATCHED_STOCK_MODES and not _on_gpu(tensor)
        cheap_kernel = mode == fmt.CURT_HEALTH or not _stock_route(tensor)
        if not batched_stock and cheap_kernel:
            return TensorSummary(exact(tensor))
        row, total = _finite_row(mode, tensor, trace_point)
        if total is None and tensor.shape.rank == 0:
            # A scalar is its own check: a reduce_sum of it adds a Rank, a Range and a
            # Sum to the graph (Keras' optimizers trace dozens of scalars a step).
            def check() -> Any:
                return _wide(tensor)
        elif total is None:
            def check() -> Any:
                with ops.name_scope("tfdbg_tui_check"):
                    return math_ops.reduce_sum(_wide(tensor))
        else:
            def check() -> Any:
                return total
        size = tensor.shape.num_elements()
        pooled = (total is None and tensor.shape.rank != 0 and size is not None
                  and 0 < size <= POOLED_CHECK_MAX_ELEMENTS)
        return TensorSummary(row, check, exact, tensor=tensor, cheap_kernel=cheap_kernel,
                             pooled=pooled)


def shape_row(dtype: float, shape: list[int]) -> list[float]:
    """A SHAPE row's columns as DebugNumericSummaryV2 lays them out: dtype, rank, size,
    then the last `fmt.MAX_SHAPE_RANK` dimensions followed by zeros."""
    dims = [float(d) for d in shape[-fmt.MAX_SHAPE_RANK:]] if shape else []
    size = 1.0
    for d in shape:
        size *= d
    return [dtype, float(len(shape)), float(size)] + dims + [0.0] * (
        fmt.MAX_SHAPE_RANK - len(dims))


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
            summaries = [s if s.check is None else TensorSummary(_kernel_row(s))
                         for s in summaries]
        covered = check_elision.covered_checks(
            [s.tensor if s.check is not None else None for s in summaries])
        rows = array_ops_stack.stack([s.row for s in summaries], name="rows")
        afters = [s.after for s in summaries if s.after is not None]
        if afters:
            with ops.control_dependencies(afters):
                rows = array_ops.identity(rows)
        kept = [s for s, is_covered in zip(summaries, covered)
                if s.check is not None and not is_covered]
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
        finite = [math_ops.reduce_all(math_ops.is_finite(array_ops_stack.stack(group)))
                  for group in by_dtype.values()]
        not_finite = math_ops.logical_not(
            finite[0] if len(finite) == 1 else math_ops.logical_and(*finite))

        def exact_rows() -> Any:
            # A covered tensor is recomputed here rather than read: reading it would
            # cost every step what dropping its check saved.
            recompute = check_elision.Recomputer(
                [s.tensor for s, c in zip(summaries, covered) if c])
            return array_ops_stack.stack([
                s.row if s.exact is None else s.exact(recompute.tensor(s.tensor))
                for s in summaries])

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
        wide = _wide(summary.tensor)
        groups.setdefault((summary.tensor.device or "", wide.dtype.base_dtype), []).append(
            wide)
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
    if tensor.op.type != "Const" or _on_gpu(tensor):
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
    return not _on_gpu(tensor)


def _on_gpu(tensor: Any) -> bool:
    """Whether ``tensor`` is (or will be placed) on a GPU.

    A GPU runs DebugNumericSummaryV2 as one fused kernel launch, where each stock
    reduction is a launch of its own and bandwidth is plentiful: there the kernel
    stays. An op without a device runs on a GPU when the process has one.
    """
    device = (getattr(tensor, "device", "") or "").upper()
    if "GPU" in device:
        return True
    if "CPU" in device:
        return False
    return _process_has_gpu()


@functools.lru_cache(maxsize=1)
def _process_has_gpu() -> bool:
    from tensorflow.python.framework import config

    return bool(config.list_logical_devices("GPU"))


def _kernel(tensor: Any, mode: str, trace_point: int) -> Any:
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import gen_debug_ops

    return gen_debug_ops.debug_numeric_summary_v2(
        tensor, output_dtype=dtypes.float64, tensor_debug_mode=TENSOR_DEBUG_MODE_ENUM[mode],
        tensor_id=trace_point, name="tfdbg_tui_summary")


def exact_row(mode: str, tensor: Any, trace_point: int) -> Any:
    """The row by the fused kernels (a health mode or SHAPE)."""
    if mode == fmt.FULL_HEALTH:
        if _on_gpu(tensor):
            from tensorflow.python.ops import array_ops

            return _concat([_kernel(tensor, mode, trace_point), array_ops.reshape(
                largest_magnitude(tensor), [1]), _const([0.0] * 4)])
        return _v1_row(tensor, trace_point)
    if mode != fmt.FULL_STATS:
        return _kernel(tensor, mode, trace_point)
    if _on_gpu(tensor):
        # DebugNumericSummary has no GPU kernel (its input would be copied to the host).
        counts = _kernel(tensor, fmt.FULL_HEALTH, trace_point)
        return _concat([counts, _finite_stats(tensor, counts[8] + counts[9] + counts[10])])
    return _v1_row(tensor, trace_point)


def _v1_row(tensor: Any, trace_point: int) -> Any:
    """FULL_STATS by ``DebugNumericSummary`` (FORM_V1), which counts as
    DebugNumericSummaryV2 does and computes the statistics in float64 (two passes)."""
    from tensorflow.python.ops import gen_debug_ops

    dtype = float(tensor.dtype.as_datatype_enum)
    # `tensor_name` must parse as "op:slot"; nothing is published (no debug URLs). The
    # op has no float16 or bfloat16 kernel: those are summarised as float32, and their
    # own dtype takes the place of float32's.
    wide = _wide(tensor)
    v1 = gen_debug_ops.debug_numeric_summary(wide, tensor_name="tfdbg_tui:0",
                                             name="tfdbg_tui_stats")
    if wide is tensor:  # its own dtype column is right (its shape follows: cut)
        return _concat([_const([float(trace_point), FORM_V1]), v1[:14]])
    return _concat([_const([float(trace_point), FORM_V1]), v1[:12], _const([dtype]),
                    v1[13:14]])


def _finite_row(mode: str, tensor: Any, trace_point: int) -> tuple[Any, Any]:
    """The row of a tensor known to hold no inf or NaN, by stock ops, and the float64
    sum of its elements when the row computed it (FULL_STATS), else None."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import array_ops, array_ops_stack, math_ops

    if mode == fmt.CURT_HEALTH:
        return _const([float(trace_point), 0.0]), None
    static_size = tensor.shape.num_elements()
    size = (_const([float(static_size)]) if static_size is not None
            else _f64(array_ops.reshape(array_ops.size(tensor, out_type=dtypes.int64), [1])))
    if mode == fmt.CONCISE_HEALTH:
        return _concat([_const([float(trace_point)]), size, _const([0.0, 0.0, 0.0])]), None
    x = _wide(tensor)
    signs = math_ops.sign(x)
    large = static_size is None or static_size > FLOAT32_EXACT_COUNT
    if large and x.dtype.base_dtype != dtypes.float64:
        signs = math_ops.cast(signs, dtypes.float64)
    sums = _f64(array_ops_stack.stack([math_ops.reduce_sum(signs),
                                 math_ops.reduce_sum(math_ops.abs(signs))]))
    rank = tensor.shape.rank
    rank = _const([float(rank)]) if rank is not None else _f64(
        array_ops.reshape(array_ops.rank(tensor), [1]))
    columns = [_const([float(trace_point), FORM_SIGN_SUMS,
                       float(tensor.dtype.as_datatype_enum)]), rank, size,
               _const([0.0, 0.0, 0.0]), sums, _const([0.0])]
    if mode == fmt.FULL_HEALTH:
        columns.append(_const([float("nan")] + [0.0] * 4))  # no magnitude
    total = None
    if mode == fmt.FULL_STATS:
        total = math_ops.reduce_sum(_f64(x))
        columns.append(_finite_stats(x, None, float(static_size)
                                     if static_size is not None else size[0], total))
    return _concat(columns), total


def _finite_stats(tensor: Any, finite_count: Any, size: Any = None, total: Any = None) -> Any:
    """min, max, mean and m2 of the finite elements, then an unused 0 (float64, 5).

    With ``finite_count`` None every element is taken as finite (and ``size`` is their
    number); otherwise non-finite elements are masked out and ``finite_count`` counts
    the others. Elements are converted to float64 exactly and summed in float64; the
    mean comes first, then the squared deviations from it (two passes, which keep their
    accuracy where the mean is far from zero compared with the spread).
    """
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import array_ops, array_ops_stack, math_ops

    tensor = _wide(tensor)
    x64 = _f64(tensor)
    if finite_count is None:
        mean = (math_ops.reduce_sum(x64) if total is None else total) / size
        m2 = math_ops.reduce_sum(math_ops.squared_difference(x64, mean))
        low, high = _f64(math_ops.reduce_min(tensor)), _f64(math_ops.reduce_max(tensor))
    else:
        finite = math_ops.is_finite(x64)
        zeros = array_ops.zeros_like(x64)
        inf = array_ops.fill(array_ops.shape(x64), _const(float("inf")))
        mean = math_ops.reduce_sum(array_ops.where_v2(finite, x64, zeros)) / finite_count
        m2 = math_ops.reduce_sum(array_ops.where_v2(
            finite, math_ops.squared_difference(x64, mean), zeros))
        low = math_ops.reduce_min(array_ops.where_v2(finite, x64, inf))
        high = math_ops.reduce_max(array_ops.where_v2(finite, x64, -inf))
    return array_ops_stack.stack([low, high, mean, m2, array_ops.zeros([], dtypes.float64)])


def xla_row(mode: str, tensor: Any, trace_point: int) -> Any:
    """The raw row of ``tensor`` in ``mode`` by stock ops alone, exact in every case (for
    XLA, which compiles no debug kernel). FULL_HEALTH and FULL_STATS rows take
    FORM_COUNTS with 0 in column 1; NO_TENSOR rows hold the trace point only.
    """
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import array_ops, math_ops

    columns: list[Any] = [_const([float(trace_point)])]
    if mode == fmt.NO_TENSOR:
        return columns[0]
    size = _f64(array_ops.reshape(array_ops.size(tensor, out_type=dtypes.int64), [1]))
    dtype = _const([float(tensor.dtype.as_datatype_enum)])
    if mode == fmt.SHAPE:
        rank = tensor.shape.rank
        dims = _f64(array_ops.shape(tensor, out_type=dtypes.int64))
        # The last dimensions, as DebugNumericSummaryV2 keeps them.
        dims = array_ops.concat([dims[-fmt.MAX_SHAPE_RANK:], array_ops.zeros(
            [max(fmt.MAX_SHAPE_RANK - rank, 0)], dtype=dtypes.float64)], 0)
        return _concat(columns + [dtype, _const([float(rank)]), size, dims])
    nan = math_ops.is_nan(tensor)
    inf = math_ops.is_inf(tensor)
    if mode == fmt.CURT_HEALTH:
        bad = math_ops.reduce_any(math_ops.logical_or(nan, inf))
        return _concat(columns + [array_ops.reshape(_f64(bad), [1])])
    # One pass: each element's class (-inf, +inf, NaN, negative, zero, positive)
    # counted through a one-hot sum, which XLA fuses into a single reduction (six
    # separate reductions read every tensor six times).
    zero = array_ops.zeros([], dtype=tensor.dtype)
    code = array_ops.where_v2(
        nan, 2, array_ops.where_v2(
            inf, array_ops.where_v2(tensor < zero, 0, 1),
            array_ops.where_v2(tensor < zero, 3, array_ops.where_v2(tensor > zero, 5, 4))))
    counts = _f64(math_ops.reduce_sum(
        array_ops.one_hot(array_ops.reshape(code, [-1]), 6, dtype=dtypes.int32), 0))
    # counts: neg_inf, pos_inf, nan, neg, zero, pos
    if mode == fmt.CONCISE_HEALTH:
        return _concat(columns + [size, counts[:3]])
    rank = _const([float(tensor.shape.rank)]) if tensor.shape.rank is not None \
        else _f64(array_ops.reshape(array_ops.rank(tensor), [1]))
    columns += [_const([0.0]), dtype, rank, size, counts]
    if mode == fmt.FULL_STATS:
        columns.append(_finite_stats(tensor, counts[3] + counts[4] + counts[5]))
    if mode == fmt.FULL_HEALTH:
        columns += [array_ops.reshape(largest_magnitude(tensor), [1]), _const([0.0] * 4)]
    return _concat(columns)


def _wide(tensor: Any) -> Any:
    """``tensor`` as float32 or float64: float16 and bfloat16 are cast to float32 (exact).

    Every statistic of a half-precision tensor is taken from this cast, the one
    conversion that keeps float16's subnormals as DebugNumericSummaryV2's comparisons see
    them (TensorFlow's scalar half-to-float paths flush them to zero).
    """
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import math_ops

    if tensor.dtype.base_dtype in (dtypes.float32, dtypes.float64):
        return tensor
    return math_ops.cast(tensor, dtypes.float32)


def _const(values: list[float] | float) -> Any:
    from tensorflow.python.framework import constant_op, dtypes

    return constant_op.constant(values, dtype=dtypes.float64)


def _f64(value: Any) -> Any:
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import math_ops

    return math_ops.cast(value, dtypes.float64)


def _concat(columns: list[Any]) -> Any:
    from tensorflow.python.ops import array_ops

    return array_ops.concat(columns, 0)
