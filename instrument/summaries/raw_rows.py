"""The raw summary row of one tensor, built by TensorFlow ops in the graph (or eagerly):
by the fused kernels, by stock ops for a finite tensor, by stock ops alone under XLA;
the raw row's forms.

Three builders, each exact where it is used (`instrument.summaries.summary_ops` picks
the route): `exact_row`, by the fused kernels (``DebugNumericSummaryV2``, and
``DebugNumericSummary`` for FULL_STATS on a CPU); `finite_row`, by
vectorised stock ops, which holds only for a tensor without inf or NaN (the stock
route, whose batch checks that); `xla_row`, by stock ops alone and exact in every
case, for XLA, which compiles no debug kernel. Below, the forms a raw row takes.
"""

from __future__ import annotations

import functools
from typing import Any

from instrument.summaries.magnitudes import largest_magnitude
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
# format's `max_abs`: FORM_COUNTS and FORM_SIGN_SUMS rows with the largest |x| in
# column 11 (an absolute value and a maximum beside the kernel; NaN on the stock route,
# where it would cost a pass over a large tensor: a third more FULL_HEALTH overhead on a
# convolutional fit), then four unused zeros. (DebugNumericSummary's min and max would
# give it in one op, but that kernel costs about 5 us a call more: on an LSTM's loops,
# 1,586 small tensors a step, a fifth more FULL_HEALTH overhead.)
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
# Sums of signs are exact in float32 while no partial sum can pass 2**24; past that
# (or when the size is only known at run time) they are taken in float64.
FLOAT32_EXACT_COUNT = 1 << 24


def shape_row(dtype: float, shape: list[int]) -> list[float]:
    """A SHAPE row's columns as DebugNumericSummaryV2 lays them out: dtype, rank, size,
    then the last `fmt.MAX_SHAPE_RANK` dimensions followed by zeros."""
    dims = [float(d) for d in shape[-fmt.MAX_SHAPE_RANK :]] if shape else []
    size = 1.0
    for d in shape:
        size *= d
    return [dtype, float(len(shape)), float(size)] + dims + [0.0] * (fmt.MAX_SHAPE_RANK - len(dims))


def on_gpu(tensor: Any) -> bool:
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
        tensor,
        output_dtype=dtypes.float64,
        tensor_debug_mode=TENSOR_DEBUG_MODE_ENUM[mode],
        tensor_id=trace_point,
        name="tfdbg_tui_summary",
    )


def exact_row(mode: str, tensor: Any, trace_point: int) -> Any:
    """The row by the fused kernels (a health mode or SHAPE)."""
    if mode == fmt.FULL_HEALTH:
        from tensorflow.python.ops import array_ops

        return _concat(
            [
                _kernel(tensor, mode, trace_point),
                array_ops.reshape(largest_magnitude(tensor), [1]),
                float64_constant([0.0] * 4),
            ]
        )
    if mode != fmt.FULL_STATS:
        return _kernel(tensor, mode, trace_point)
    if on_gpu(tensor):
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
    wide = as_wide(tensor)
    v1 = gen_debug_ops.debug_numeric_summary(
        wide, tensor_name="tfdbg_tui:0", name="tfdbg_tui_stats"
    )
    if wide is tensor:  # its own dtype column is right (its shape follows: cut)
        return _concat([float64_constant([float(trace_point), FORM_V1]), v1[:14]])
    return _concat(
        [
            float64_constant([float(trace_point), FORM_V1]),
            v1[:12],
            float64_constant([dtype]),
            v1[13:14],
        ]
    )


def finite_row(mode: str, tensor: Any, trace_point: int) -> tuple[Any, Any]:
    """The row of a tensor known to hold no inf or NaN, by stock ops, and the float64
    sum of its elements when the row computed it (FULL_STATS), else None."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import array_ops, array_ops_stack, math_ops

    if mode == fmt.CURT_HEALTH:
        return float64_constant([float(trace_point), 0.0]), None
    static_size = tensor.shape.num_elements()
    size = (
        float64_constant([float(static_size)])
        if static_size is not None
        else _f64(array_ops.reshape(array_ops.size(tensor, out_type=dtypes.int64), [1]))
    )
    if mode == fmt.CONCISE_HEALTH:
        return _concat(
            [float64_constant([float(trace_point)]), size, float64_constant([0.0, 0.0, 0.0])]
        ), None
    x = as_wide(tensor)
    signs = math_ops.sign(x)
    large = static_size is None or static_size > FLOAT32_EXACT_COUNT
    if large and x.dtype.base_dtype != dtypes.float64:
        signs = math_ops.cast(signs, dtypes.float64)
    sums = _f64(
        array_ops_stack.stack(
            [math_ops.reduce_sum(signs), math_ops.reduce_sum(math_ops.abs(signs))]
        )
    )
    rank = tensor.shape.rank
    rank = (
        float64_constant([float(rank)])
        if rank is not None
        else _f64(array_ops.reshape(array_ops.rank(tensor), [1]))
    )
    columns = [
        float64_constant(
            [float(trace_point), FORM_SIGN_SUMS, float(tensor.dtype.as_datatype_enum)]
        ),
        rank,
        size,
        float64_constant([0.0, 0.0, 0.0]),
        sums,
        float64_constant([0.0]),
    ]
    if mode == fmt.FULL_HEALTH:
        columns.append(float64_constant([float("nan")] + [0.0] * 4))  # no magnitude
    total = None
    if mode == fmt.FULL_STATS:
        total = math_ops.reduce_sum(_f64(x))
        columns.append(
            _finite_stats(
                x, None, float(static_size) if static_size is not None else size[0], total
            )
        )
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

    tensor = as_wide(tensor)
    x64 = _f64(tensor)
    if finite_count is None:
        mean = (math_ops.reduce_sum(x64) if total is None else total) / size
        m2 = math_ops.reduce_sum(math_ops.squared_difference(x64, mean))
        low, high = _f64(math_ops.reduce_min(tensor)), _f64(math_ops.reduce_max(tensor))
    else:
        finite = math_ops.is_finite(x64)
        zeros = array_ops.zeros_like(x64)
        inf = array_ops.fill(array_ops.shape(x64), float64_constant(float("inf")))
        mean = math_ops.reduce_sum(array_ops.where_v2(finite, x64, zeros)) / finite_count
        m2 = math_ops.reduce_sum(
            array_ops.where_v2(finite, math_ops.squared_difference(x64, mean), zeros)
        )
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

    columns: list[Any] = [float64_constant([float(trace_point)])]
    if mode == fmt.NO_TENSOR:
        return columns[0]
    size = _f64(array_ops.reshape(array_ops.size(tensor, out_type=dtypes.int64), [1]))
    dtype = float64_constant([float(tensor.dtype.as_datatype_enum)])
    if mode == fmt.SHAPE:
        rank = tensor.shape.rank
        dims = _f64(array_ops.shape(tensor, out_type=dtypes.int64))
        # The last dimensions, as DebugNumericSummaryV2 keeps them.
        dims = array_ops.concat(
            [
                dims[-fmt.MAX_SHAPE_RANK :],
                array_ops.zeros([max(fmt.MAX_SHAPE_RANK - rank, 0)], dtype=dtypes.float64),
            ],
            0,
        )
        return _concat(columns + [dtype, float64_constant([float(rank)]), size, dims])
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
        nan,
        2,
        array_ops.where_v2(
            inf,
            array_ops.where_v2(tensor < zero, 0, 1),
            array_ops.where_v2(tensor < zero, 3, array_ops.where_v2(tensor > zero, 5, 4)),
        ),
    )
    counts = _f64(
        math_ops.reduce_sum(
            array_ops.one_hot(array_ops.reshape(code, [-1]), 6, dtype=dtypes.int32), 0
        )
    )
    # counts: neg_inf, pos_inf, nan, neg, zero, pos
    if mode == fmt.CONCISE_HEALTH:
        return _concat(columns + [size, counts[:3]])
    rank = (
        float64_constant([float(tensor.shape.rank)])
        if tensor.shape.rank is not None
        else _f64(array_ops.reshape(array_ops.rank(tensor), [1]))
    )
    columns += [float64_constant([0.0]), dtype, rank, size, counts]
    if mode == fmt.FULL_STATS:
        columns.append(_finite_stats(tensor, counts[3] + counts[4] + counts[5]))
    if mode == fmt.FULL_HEALTH:
        columns += [array_ops.reshape(largest_magnitude(tensor), [1]), float64_constant([0.0] * 4)]
    return _concat(columns)


def as_wide(tensor: Any) -> Any:
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


def float64_constant(values: list[float] | float) -> Any:
    """``values`` as a float64 constant."""
    from tensorflow.python.framework import constant_op, dtypes

    return constant_op.constant(values, dtype=dtypes.float64)


def _f64(value: Any) -> Any:
    """``value`` cast to float64."""
    from tensorflow.python.framework import dtypes
    from tensorflow.python.ops import math_ops

    return math_ops.cast(value, dtypes.float64)


def _concat(columns: list[Any]) -> Any:
    """A row's columns, 1-D tensors, joined."""
    from tensorflow.python.ops import array_ops

    return array_ops.concat(columns, 0)
