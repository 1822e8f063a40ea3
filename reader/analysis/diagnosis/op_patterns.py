"""The diagnosis rules of an op's own, and their op tables: what its type, dtypes and
the summaries of its inputs and output say (`RULES`, in the order they are tried).

Each pattern is one `Rule` entry of `RULES` (its pattern, label, usual fix and check);
each check is a small function of the `Site` that returns a `Finding` or None. Only
summaries are used, so a check is as precise as the run's mode: FULL_HEALTH and
FULL_TENSOR count zeros and negatives; CONCISE_HEALTH and CURT_HEALTH do not, and the
checks then rest on the op type and the output alone.
"""

from __future__ import annotations

import math

from reader import format as fmt
from reader.analysis.diagnosis.input_source import SOURCE_OPS
from reader.analysis.diagnosis.rule import Finding, Rule, Site
from reader.analysis.diagnosis.wording import count_text as _count
from reader.analysis.diagnosis.wording import nonfinite_text as _nonfinite_text
from reader.analysis.diagnosis.wording import values_text as _values
from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS

LOG_OPS = frozenset({"Log", "Log1p", "Xlogy", "Xlog1py"})
# Op type -> index of the input that is the denominator.
DIVISION_OPS = {
    "RealDiv": 1,
    "Div": 1,
    "FloorDiv": 1,
    "TruncateDiv": 1,
    "FloorMod": 1,
    "TruncateMod": 1,
    "Mod": 1,
    "Xdivy": 1,
    "Reciprocal": 0,
    "Inv": 0,
    "DivNoNan": 1,
}
SQRT_OPS = frozenset({"Sqrt", "Rsqrt", "Pow"})
# Ops that can overflow a finite input to infinity (others doing so are "unknown").
OVERFLOW_OPS = frozenset(
    {
        "Exp",
        "Expm1",
        "Mul",
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "AddV2",
        "Add",
        "AddN",
        "Sub",
        "Square",
        "SquaredDifference",
        "Pow",
        "Cast",
        "Sum",
        "Prod",
        "Mean",
        "Cumsum",
        "Cumprod",
        "Softplus",
        "Cosh",
        "Sinh",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv2dNative",
        "BiasAdd",
        "Einsum",
        "Tensordot",
        "Neg",
        "Multiply",
        "ScalarMul",
        "LinSpace",
        "Range",
        "Relu",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "Conv3DBackpropInputV2",
        "Conv3DBackpropFilterV2",
        "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter",
    }
)
# Ops in which infinities meet: inf - inf, 0 * inf, inf / inf give NaN.
INF_ARITHMETIC_OPS = frozenset(
    {
        "AddV2",
        "Add",
        "AddN",
        "Sub",
        "Mul",
        "RealDiv",
        "Div",
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "Sum",
        "Mean",
        "Prod",
        "Cumsum",
        "BiasAdd",
        "Einsum",
        "Conv2D",
        "Conv3D",
        "SquaredDifference",
        "Softmax",
        "LogSoftmax",
        "Xlogy",
        "Tensordot",
        "Multiply",
        "Sigmoid",
        "Tanh",
        "Exp",
        "Pow",
    }
)
SINGULAR_GRADIENT_OPS = {
    "SqrtGrad": "sqrt",
    "RsqrtGrad": "rsqrt",
    "ReciprocalGrad": "1/x",
    "InvGrad": "1/x",
    "TanhGrad": "tanh",
    "SigmoidGrad": "sigmoid",
}
GRADIENT_SCOPES = ("gradient_tape/", "gradients/", "gradients_")

# Largest finite value per dtype (numpy's finfo; bfloat16 from its 8-bit exponent).
DTYPE_MAX = {"float16": "65504", "bfloat16": "3.39e38", "float32": "3.40e38", "float64": "1.80e308"}
_DTYPE_WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def _is_gradient(site: Site) -> bool:
    """Whether the op is a gradient kernel, or an op under a gradient scope."""
    name = site.op_name or ""
    return site.op_type in SINGULAR_GRADIENT_OPS or any(
        name.startswith(s) or f"/{s}" in name for s in GRADIENT_SCOPES
    )


# -- the checks: each returns a Finding or None ------------------------------------------


# Ops that hold a value written into the program.
_CONSTANT_OPS = frozenset({"Const", "HostConst", "Fill"})
# In a TF1 graph a placeholder is what ``Session.run`` feeds, not a function's argument.
TF1_FEED_OPS = frozenset({"Placeholder", "PlaceholderWithDefault"})


def _nonfinite_input(site: Site) -> Finding | None:
    if site.op_type in fmt.RECEIVING_OPS:
        used = f", used in {site.subject}" if site.expression else ""
        return Finding(
            f"No op of this worker made these values: {site.op_type} brought "
            f"{_nonfinite_text(site.output)} from another worker or replica{used}",
            fix="open the runs of the other workers (r in the TUI; tfdbg-tui "
            "report names the worker that went non-finite first): the root "
            "cause is in the first one",
        )
    source = SOURCE_OPS.get(site.op_type)
    from_data = (
        site.source is not None
        and site.source.kind == "dataset"
        and site.op_type not in DATASET_DELIVERY_OPS
    )
    if from_data:
        source = "the data the tf.data pipeline was built from"
    if source is None:
        return None
    what = f"{source} read by {site.op_type} '{site.op_name}'" if site.op_name else source
    if from_data and site.op_type not in SOURCE_OPS and site.op_name:
        what = f"{source}, handed to {site.op_type} '{site.op_name}' as its element,"
    if site.in_tf1_graph and site.op_type in TF1_FEED_OPS:
        what = f"the value fed (feed_dict) to {site.op_type} '{site.op_name}'"
    used = f", used in {site.subject}" if site.expression else ""
    found = site.source
    return Finding(
        f"No op in the dump made these values: {what} already held "
        f"{_nonfinite_text(site.output)}{used}" + (f"; {found.text}" if found else ""),
        found.evidence if found else (),
        fix=found.suggestion if found else None,
        source=found,
    )


def _singular_gradient(site: Site) -> Finding | None:
    if not _is_gradient(site):
        return None
    forward = SINGULAR_GRADIENT_OPS.get(site.op_type)
    if forward is not None:
        name, y = site.input(0)
        at = (
            f" (its forward output {name} held {_count(y.zero, 'exact zero')})"
            if y is not None and y.zero
            else ""
        )
        text = (
            f"{site.subject} built {site.op_type}, the gradient of {forward}, which is "
            f"infinite where {forward}'s output is 0{at}; it made "
            f"{_nonfinite_text(site.output)}"
        )
    elif (
        site.op_type in OVERFLOW_OPS
        and site.output is not None
        and not site.output.nan
        and all(s is not None and not s.is_alert for _, s in site.inputs)
    ):
        return None  # finite inputs, infinite products or sums: an overflow (float16)
    else:
        text = (
            f"{site.subject} built the gradient op {site.op_type} '{site.op_name}', "
            f"which made {_nonfinite_text(site.output)} from {site.inputs_state}: "
            f"the forward op is at a singular point (log, sqrt, pow or a norm at 0)"
        )
    return Finding.fitted(site, text)


def _log(site: Site) -> Finding | None:
    if site.op_type not in LOG_OPS:
        return None
    position = 1 if site.op_type in ("Xlogy", "Xlog1py") else 0
    name, x = site.input(position)
    out = site.output
    if site.op_type in ("Log1p", "Xlog1py"):
        text = (
            f"{site.subject} took log(1 + x) of values at or below -1 "
            f"(input {name}): log1p(-1) = -inf and log1p(x < -1) = NaN; it made "
            f"{_nonfinite_text(out)}"
        )
    elif x is not None and x.zero is not None:
        parts = []
        if x.zero:
            parts.append(
                f"{_count(x.zero, 'exact zero')} among {_values(x.size)}, and log(0) = -inf"
            )
        if x.neg:
            parts.append(f"{_count(x.neg, 'negative value')}, whose log is NaN")
        if not parts:
            return None
        text = f"{site.subject} got " + "; and ".join(parts)
    elif out is not None and out.neg_inf:
        text = (
            f"{site.subject} made {_count(out.neg_inf, '-inf')}: log(0) = -inf, so its "
            f"input held exact zeros"
        )
    else:
        text = (
            f"{site.subject} made {_nonfinite_text(out)}: the log of a negative number "
            f"(or of 0) is not finite"
        )
    return Finding.fitted(site, text)


def _division(site: Site) -> Finding | None:
    position = DIVISION_OPS.get(site.op_type)
    if position is None:
        return None
    name, denominator = site.input(position)
    _, numerator = site.input(0) if position == 1 else (None, None)
    out = site.output
    if denominator is not None and denominator.zero is not None:
        if not denominator.zero:
            return None
        text = (
            f"{site.subject} divided by {_count(denominator.zero, 'exact zero')} "
            f"(denominator {name}, {_values(denominator.size)})"
        )
        if out is not None and out.nan and numerator is not None and numerator.zero:
            text += f"; the numerator held {_count(numerator.zero, 'zero')} too, and 0/0 = NaN"
        elif out is not None and (out.pos_inf or out.neg_inf):
            text += ", and x/0 = inf"
    else:
        text = (
            f"{site.subject} made {_nonfinite_text(out)} from finite inputs: its "
            f"denominator {name} must have held zeros (x/0 = inf, 0/0 = NaN)"
        )
    return Finding.fitted(site, text)


def _sqrt(site: Site) -> Finding | None:
    if site.op_type not in SQRT_OPS:
        return None
    name, x = site.input(0)
    out = site.output
    root = {"Sqrt": "the square root", "Rsqrt": "1/sqrt", "Pow": "a fractional power"}[site.op_type]
    if x is not None and x.neg is not None:
        parts = []
        if x.neg and out is not None and out.nan:
            parts.append(
                f"{_count(x.neg, 'negative value')} among {_values(x.size)}, and "
                f"{root} of a negative number is NaN"
            )
        if x.zero and out is not None and (out.pos_inf or out.neg_inf) and site.op_type != "Sqrt":
            parts.append(
                f"{_count(x.zero, 'exact zero')}, and "
                f"{'1/sqrt' if site.op_type == 'Rsqrt' else 'a negative power'} "
                f"of 0 is inf"
            )
        if not parts:
            return None
        text = f"{site.subject} got " + "; and ".join(parts)
    elif out is not None and out.nan:
        text = f"{site.subject} made {_nonfinite_text(out)}: {root} of negative values"
    else:
        return None
    return Finding.fitted(site, text)


def _overflow(site: Site) -> Finding | None:
    out = site.output
    if site.op_type not in OVERFLOW_OPS or out is None or out.nan:
        return None
    if not (out.pos_inf or out.neg_inf or out.has_inf_or_nan):
        return None
    if any(s is not None and s.is_alert for _, s in site.inputs):
        return None  # not an overflow of finite inputs
    dtype = site.output_dtype or "float"
    limit = DTYPE_MAX.get(dtype)
    limit_text = (
        f"{dtype}'s largest finite value is {limit}"
        if limit
        else f"the values exceeded {dtype}'s range"
    )
    source = next((d for d in site.input_dtypes if d in _DTYPE_WIDTH), None)
    if (
        site.op_type == "Cast"
        and source
        and dtype in _DTYPE_WIDTH
        and _DTYPE_WIDTH[dtype] < _DTYPE_WIDTH[source]
    ):
        text = (
            f"{site.subject} cast {source} values to the narrower {dtype}, and {limit_text}: "
            f"{_nonfinite_text(out)} came out"
        )
    else:
        text = (
            f"{site.described} turned finite inputs into "
            f"{_nonfinite_text(out)}: the result overflowed, as {limit_text}"
        )
    return Finding.fitted(
        site, text + _overflow_cause(site, dtype, limit), (f"limit: {dtype} max {limit or '?'}",)
    )


def _overflow_cause(site: Site, dtype: str, limit: str | None) -> str:
    """What the inputs' statistics (FULL_STATS) say about the overflow, or ""."""
    stats = [
        (name, s.min, s.max)
        for name, s in site.inputs
        if s is not None and s.max is not None and s.min is not None
    ]
    if not stats:  # FULL_HEALTH: the largest magnitude alone
        stats = [
            (name, -s.max_abs, s.max_abs)
            for name, s in site.inputs
            if s is not None and s.max_abs is not None
        ]
    if not stats or limit is None:
        return ""
    name, low, high = max(stats, key=lambda item: max(abs(item[1]), abs(item[2])))
    largest = high if abs(high) >= abs(low) else low
    if site.op_type in ("Exp", "Expm1"):
        threshold = math.log(float(limit))
        if high > threshold:
            return (
                f"; its input {name} reached {high:.6g}, and exp overflows {dtype} "
                f"above ln({limit}) = {threshold:.4g}"
            )
        return ""
    if site.op_type == "Cast" and abs(largest) > float(limit):
        return f"; the input {name} held values up to {largest:.6g}"
    return f"; the largest finite input magnitude was {abs(largest):.6g} (input {name})"


def _inf_arithmetic(site: Site) -> Finding | None:
    out = site.output
    if site.op_type not in INF_ARITHMETIC_OPS or out is None:
        return None
    uncounted = out.nan is None and bool(out.has_inf_or_nan)  # CURT_HEALTH
    if not (out.nan or uncounted):
        return None
    infs = [
        (name, s)
        for name, s in site.inputs
        if s is not None and (s.pos_inf or s.neg_inf or (uncounted and s.is_alert))
    ]
    if any(s is not None and s.nan for _, s in site.inputs):
        return None  # the NaN came in: not made here
    if infs:
        if site.op_type in ("Sub", "AddV2", "Add", "AddN", "Sum", "Mean", "Cumsum", "BiasAdd"):
            how = "inf - inf = NaN"
        elif site.op_type in (
            "Mul",
            "MatMul",
            "BatchMatMul",
            "BatchMatMulV2",
            "BatchMatMulV3",
            "Einsum",
            "Prod",
            "Multiply",
            "Xlogy",
        ):
            how = "0 * inf = NaN (and inf - inf in the sums)"
        elif site.op_type in ("RealDiv", "Div"):
            how = "inf / inf = NaN"
        else:
            how = "infinities combine to NaN (inf - inf, 0 * inf, inf / inf)"
        names = ", ".join(f"{name} ({_nonfinite_text(s)})" for name, s in infs)
        text = f"{site.subject} got infinite inputs {names}, and {how}"
        written = [
            name
            for (name, s), producer in zip(site.inputs, site.input_ops)
            if producer in _CONSTANT_OPS and (name, s) in infs
        ]
        zeros = [
            s.zero for name, s in site.inputs if name not in written and s is not None and s.zero
        ]
        if written and zeros and site.op_type in ("Mul", "Multiply") and not uncounted:
            return Finding(
                f"{site.subject} multiplied the infinity written into the program "
                f"({written[0]}, a mask's value) by {_count(zeros[0], 'exact zero')} of "
                f"its other input, and 0 * inf = NaN",
                fix="select instead of multiplying: tf.where(mask, x, -np.inf) "
                "(the masked elements take the infinity, the others keep "
                "theirs), or use a large finite value (-1e9) in place of the "
                "infinity",
            )
        if uncounted:
            text = (
                f"{site.subject} got non-finite inputs {names} and made "
                f"{_nonfinite_text(out)} ({out.mode} does not tell NaN from "
                f"infinity): where they are infinities, {how}"
            )
    elif site.op_type in (
        "Mul",
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "Einsum",
        "Sum",
        "Mean",
        "Conv2D",
        "Conv3D",
        "Tensordot",
    ) and all(s is not None for _, s in site.inputs):
        text = (
            f"{site.subject} made {_nonfinite_text(out)} from finite inputs: partial "
            f"results overflowed to inf and cancelled (inf - inf = NaN)"
        )
    else:
        return None
    if site.op_type in ("Softmax", "LogSoftmax"):
        return Finding.fitted(site, text)  # the others' fixes are the infinity's maker's
    return Finding(text)


# The op's own patterns, in the order they are tried (after the training patterns:
# `registry.RULES`); the first check that finds its pattern names the diagnosis.
RULES = (
    Rule(
        "nonfinite_input",
        "non-finite input",
        fix=(
            "check where the values come from: the data (filter or impute NaN rows; "
            "tf.debugging.check_numerics in the input pipeline), the variable's initialiser "
            "or the checkpoint it was restored from"
        ),
        check=_nonfinite_input,
    ),
    Rule(
        "singular_gradient",
        "singular gradient",
        fix=(
            "keep the forward op off its singular point: clip before log or pow, put "
            "an epsilon under a root (for a norm: tf.sqrt(tf.reduce_sum(x * x) + eps)), "
            "or use the double tf.where trick so the unused branch never sees the "
            "singular value"
        ),
        check=_singular_gradient,
    ),
    Rule(
        "log_of_nonpositive",
        "log of ≤0",
        fix=(
            "clip the input away from zero (tf.math.log(tf.maximum(x, 1e-7)) or log(x + "
            "eps)); for labels * log(p) use tf.math.xlogy(labels, p); better, compute the "
            "loss from logits (from_logits=True, tf.nn.softmax_cross_entropy_with_logits)"
        ),
        check=_log,
    ),
    Rule(
        "division_by_zero",
        "division by 0",
        fix=(
            "use tf.math.divide_no_nan(x, y) (0 where y == 0), add an epsilon to the "
            "denominator, or mask the empty entries before dividing"
        ),
        check=_division,
    ),
    Rule(
        "sqrt_domain",
        "sqrt of <0",
        fix=(
            "put an epsilon inside the root (tf.sqrt(x + 1e-12)) or clip it at zero "
            "(tf.sqrt(tf.maximum(x, 0.0))); a negative variance from E[x^2] - E[x]^2 is "
            "rounding: use tf.math.reduce_variance"
        ),
        check=_sqrt,
    ),
    Rule(
        "overflow",
        "overflow",
        fix=(
            "rescale the inputs or use a stable form (tf.nn.softmax, "
            "tf.math.reduce_logsumexp, a loss with from_logits=True); under mixed precision "
            "keep this op in float32 or use loss scaling "
            "(tf.keras.mixed_precision.LossScaleOptimizer)"
        ),
        check=_overflow,
    ),
    Rule(
        "inf_arithmetic",
        "inf arithmetic",
        fix=(
            "stop the infinity where it is made (the diagnosis of its first alert); inf - "
            "inf, 0 * inf and inf / inf have no value"
        ),
        check=_inf_arithmetic,
    ),
)
