"""Diagnosis: why an op made NaN or infinity, in the user's terms, and the usual fix.

The root cause (`reader.analysis.hunt.root_cause`) says where; this module says why. It classifies
the op that made a non-finite tensor from its type, dtypes and the summaries of its
inputs and output into one of `PATTERNS`, and words an explanation (the expression
the user wrote, with the counts that convict it), the usual fix, and the evidence.

Only summaries are used, so a diagnosis is as precise as the run's mode: FULL_HEALTH
and FULL_TENSOR count zeros and negatives; CONCISE_HEALTH and CURT_HEALTH do not, and
the diagnosis then rests on the op type and the output alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.diagnosis.input_source import NAN_FREE_OPS, InputSource, input_source
from reader.analysis.diagnosis.training_patterns import PATTERNS as TRAINING_PATTERNS
from reader.analysis.diagnosis.training_patterns import training_finding
from reader.analysis.diagnosis.wording import count_text as _count
from reader.analysis.diagnosis.wording import evidence_line as _evidence_line
from reader.analysis.diagnosis.wording import nonfinite_text as _nonfinite_text
from reader.analysis.diagnosis.wording import values_text as _values
from reader.analysis.hunt.model_place import library_frame_location
from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS, find_root_cause
from reader.errors import DumpError
from reader.model import Alert, Frame, Op, RootCause, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

PATTERNS = (
    "log_of_nonpositive",
    "division_by_zero",
    "sqrt_domain",
    "overflow",
    "singular_gradient",
    "inf_arithmetic",
    "nonfinite_input",
    "unknown",
    *TRAINING_PATTERNS,
    "contained",
)

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
# Ops that bring values into the computation rather than compute them: what they
# output non-finite came in from outside. Op type -> what it is, in the user's terms.
SOURCE_OPS = {
    "ReadVariableOp": "the variable",
    "ResourceGather": "the variable",
    "VariableV2": "the variable",
    "Variable": "the variable",
    "Placeholder": "the function argument",
    "PlaceholderWithDefault": "the function argument",
    "_Arg": "the function argument",
    "IteratorGetNext": "the input data (tf.data)",
    "IteratorGetNextSync": "the input data",
    "OptionalGetValue": "the input data (tf.data)",
    "Const": "the constant",
    "RestoreV2": "the restored checkpoint",
    "Restore": "the restored checkpoint",
    "PyFunc": "the Python function (tf.numpy_function, or a from_generator generator)",
    "EagerPyFunc": "the Python function (tf.py_function)",
}
# Collective ops: what they output non-finite was sent by another worker or replica,
# which made it (`reader.analysis.jobs` finds the worker that went non-finite first).
COLLECTIVE_OPS = frozenset(
    {
        "CollectiveReduce",
        "CollectiveReduceV2",
        "CollectiveReduceV3",
        "CollectiveGather",
        "CollectiveGatherV2",
        "CollectiveBcastRecv",
        "CollectiveBcastRecvV2",
        "CollectiveAllToAllV2",
        "CollectiveAllToAllV3",
        "CollectiveReduceScatterV2",
        "NcclAllReduce",
        "NcclReduce",
        "NcclBroadcast",
        "_Recv",
        "_HostRecv",
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

SUGGESTIONS = {
    "log_of_nonpositive": (
        "clip the input away from zero (tf.math.log(tf.maximum(x, 1e-7)) or log(x + eps)); "
        "for labels * log(p) use tf.math.xlogy(labels, p); better, compute the loss from "
        "logits (from_logits=True, tf.nn.softmax_cross_entropy_with_logits)"
    ),
    "division_by_zero": (
        "use tf.math.divide_no_nan(x, y) (0 where y == 0), add an epsilon to the "
        "denominator, or mask the empty entries before dividing"
    ),
    "sqrt_domain": (
        "put an epsilon inside the root (tf.sqrt(x + 1e-12)) or clip it at zero "
        "(tf.sqrt(tf.maximum(x, 0.0))); a negative variance from E[x^2] - E[x]^2 is "
        "rounding: use tf.math.reduce_variance"
    ),
    "overflow": (
        "rescale the inputs or use a stable form (tf.nn.softmax, tf.math.reduce_logsumexp, "
        "a loss with from_logits=True); under mixed precision keep this op in float32 or "
        "use loss scaling (tf.keras.mixed_precision.LossScaleOptimizer)"
    ),
    "singular_gradient": (
        "keep the forward op off its singular point: an epsilon inside sqrt or norm "
        "(tf.sqrt(x + eps), tf.norm(x + eps)), clip before log or pow, or use the double "
        "tf.where trick so the unused branch never sees the singular value"
    ),
    "inf_arithmetic": (
        "stop the infinity where it is made (the diagnosis of its first alert); "
        "inf - inf, 0 * inf and inf / inf have no value"
    ),
    "nonfinite_input": (
        "check where the values come from: the data (filter or impute NaN rows; "
        "tf.debugging.check_numerics in the input pipeline), the variable's initialiser "
        "or the checkpoint it was restored from"
    ),
    "unknown": (
        "look at the op's inputs in Graph Structure; tf.debugging.check_numerics right "
        "after the expression narrows it down"
    ),
}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why an alert's tensor went non-finite, and the usual fix.

    Attributes:
        pattern: One of `PATTERNS`.
        explanation: One or two sentences in the user's terms (the expression, counts).
        suggestion: The usual fix for the pattern.
        evidence: The counts and facts the classification used, one line each.
        alert: The alert whose op is diagnosed (the root cause's, for a propagated one).
        source: ``nonfinite_input``: where the values came from, when the dump says.
    """

    pattern: str
    explanation: str
    suggestion: str
    evidence: tuple[str, ...]
    alert: Alert | None = None
    source: InputSource | None = None


def diagnose_root_cause(reader: AnalysedRun) -> Diagnosis | None:
    """The diagnosis of the run's root cause; None when nothing went non-finite."""
    cause = reader.root_cause()
    return diagnose_cause(reader, cause) if cause is not None else None


def diagnose_alert(reader: AnalysedRun, alert: Alert) -> Diagnosis:
    """The diagnosis of one alert: its own op when that made the non-finite values;
    otherwise where they came from (inf arithmetic here, or the root cause upstream).
    A contained alert is diagnosed as such: why it did no harm."""
    containment = reader.harm().of_alert(alert)
    if containment is not None:
        return Diagnosis(
            "contained",
            f"Contained ({containment.reason}): {containment.explanation}.",
            "nothing to fix here: this value did no harm (the diagnosis line shows the "
            "run's verdict on opening)",
            containment.evidence,
            alert,
        )
    local = find_root_cause(reader, alert, walk=False)
    site = _Site.of(reader, local)
    if site.is_function_call:
        inner = [a for a in reader.alerts().alerts if a.kind == "graph" and a.step == alert.index]
        if inner:
            return diagnose_alert(reader, inner[0])
    bad_inputs = [(name, s) for name, s in site.inputs if s is not None and s.is_alert]
    if not bad_inputs:
        return diagnose_cause(reader, local)
    found = _inf_arithmetic(site)
    if found is not None:
        return found
    root = reader.root_cause(alert) or find_root_cause(reader, alert)
    upstream = diagnose_cause(reader, root)
    name, summary = bad_inputs[0]
    lead = (
        f"{site.subject} got {_nonfinite_text(summary)} from its input {name}; "
        f"they began upstream: "
    )
    return replace(
        upstream,
        explanation=lead + upstream.explanation,
        evidence=(_evidence_line(f"input {name}", summary), *upstream.evidence),
    )


def diagnose_cause(reader: AnalysedRun, cause: RootCause) -> Diagnosis:
    """Classify a root cause (an op whose known inputs were finite): the rules that
    know training first (`reader.analysis.diagnosis.training_patterns`), then the op's own."""
    site = _Site.of(reader, cause)
    finding = training_finding(reader, cause, site.subject)
    if finding is not None:
        return site.diagnosis(
            finding.pattern, finding.explanation, *finding.evidence, suggestion=finding.suggestion
        )
    for rule in (
        _nonfinite_input,
        _singular_gradient,
        _log,
        _division,
        _sqrt,
        _overflow,
        _inf_arithmetic,
    ):
        found = rule(site)
        if found is not None:
            return found
    return site.diagnosis(
        "unknown",
        f"{site.described} made {_nonfinite_text(site.output)} "
        f"from {_inputs_state(site)}; no known pattern matches",
    )


@dataclass(frozen=True)
class _Site:
    """The op under diagnosis: what it is and what went in and out."""

    alert: Alert
    op_type: str
    op_name: str | None
    expression: str | None
    output: Summary | None
    output_dtype: str | None
    inputs: tuple[tuple[str, Summary | None], ...]
    input_dtypes: tuple[str | None, ...]
    is_function_call: bool
    # The op type of each input's producer, where the dump defines it.
    input_ops: tuple[str | None, ...] = ()
    # The library function that made the op under the user's expression, if one did.
    library: Frame | None = None
    source: InputSource | None = None
    in_tf1_graph: bool = False

    @classmethod
    def of(cls, reader: AnalysedRun, cause: RootCause) -> _Site:
        alert = cause.alert
        output: Summary | None = None
        output_dtype = None
        if cause.trace is not None:
            output = cause.trace.summary
            if cause.op is not None and alert.slot < len(cause.op.output_dtypes):
                output_dtype = cause.op.output_dtypes[alert.slot]
        elif cause.execution is not None:
            output = cause.execution.summary(alert.slot)
            dtypes = cause.execution.output_dtypes
            output_dtype = dtypes[alert.slot] if alert.slot < len(dtypes) else None
        if output is not None and output.dtype:
            output_dtype = output.dtype
        inputs = tuple((f"`{ref.name}`", summary) for ref, summary in cause.inputs)
        is_call = (
            alert.kind == "eager" and cause.execution is not None and cause.execution.is_function
        )
        expression = expression_of(reader, cause.frame)
        source = (
            input_source(reader, cause)
            if alert.op_type in SOURCE_OPS or alert.op_type in NAN_FREE_OPS
            else None
        )
        input_ops = tuple(_producer_type(reader, ref.op_id) for ref, _ in cause.inputs)
        try:
            library = reader.place(alert).library_frame
        except DumpError:
            library = None
        return cls(
            alert=alert,
            op_type=alert.op_type,
            op_name=alert.op_name,
            expression=expression,
            output=output,
            output_dtype=output_dtype,
            inputs=inputs,
            input_dtypes=tuple(s.dtype if s else None for _, s in cause.inputs),
            is_function_call=is_call,
            source=source,
            input_ops=input_ops,
            library=library,
            in_tf1_graph=cause.op is not None and _is_tf1_graph(reader, cause.op),
        )

    @property
    def subject(self) -> str:
        """How the explanation names the op: the user's expression when known; for an
        op a library function made under it, that function's op under the expression
        (the user's line alone, `model.fit(...)`, says little of which op it was)."""
        if self.expression and self.library is not None:
            function = self.library.function
            where = (
                f"at {library_frame_location(self.library)}"
                if function.startswith("<")
                else f"of {function} ({library_frame_location(self.library)})"
            )
            return f"the {self.op_type} {where} under `{self.expression}`"
        if self.expression:
            return f"`{self.expression}`"
        if self.op_name:
            return f"{self.op_type} '{self.op_name}'"
        return self.op_type

    @property
    def described(self) -> str:
        """The subject, with the op type when the subject is the user's expression."""
        if self.expression and self.library is None:
            return f"{self.subject} ({self.op_type})"
        return self.subject

    @property
    def is_gradient(self) -> bool:
        name = self.op_name or ""
        return self.op_type in SINGULAR_GRADIENT_OPS or any(
            name.startswith(s) or f"/{s}" in name for s in GRADIENT_SCOPES
        )

    def input(self, position: int) -> tuple[str, Summary | None]:
        if 0 <= position < len(self.inputs):
            return self.inputs[position]
        return f"input {position}", None

    def diagnosis(
        self, pattern: str, explanation: str, *extra: str, suggestion: str | None = None
    ) -> Diagnosis:
        evidence = [_evidence_line(f"input {name}", s) for name, s in self.inputs]
        tensor = f"{self.op_name or self.op_type}:{self.alert.slot}"
        evidence.append(_evidence_line(f"output `{tensor}`", self.output))
        evidence.extend(extra)
        return Diagnosis(
            pattern=pattern,
            explanation=explanation + ".",
            suggestion=suggestion or SUGGESTIONS[pattern],
            evidence=tuple(evidence),
            alert=self.alert,
        )


def _producer_type(reader: AnalysedRun, op_id: int | None) -> str | None:
    if op_id is None:
        return None
    try:
        return reader.op(op_id).op_type
    except DumpError:
        return None


# -- the rules, in order: each returns a Diagnosis or None ------------------------------


# Ops that hold a value written into the program.
_CONSTANT_OPS = frozenset({"Const", "HostConst", "Fill"})
# In a TF1 graph a placeholder is what ``Session.run`` feeds, not a function's argument.
TF1_FEED_OPS = frozenset({"Placeholder", "PlaceholderWithDefault"})


def _is_tf1_graph(reader: AnalysedRun, op: Op) -> bool:
    """Whether ``op`` is in a TF1 graph: the graphs of tf.function and control flow
    are named, a ``tf.compat.v1`` graph is not (docs/format.md, ``graph``)."""
    try:
        return reader.graph(op.graph_id).name is None
    except DumpError:
        return False


def _nonfinite_input(site: _Site) -> Diagnosis | None:
    if site.op_type in COLLECTIVE_OPS:
        used = f", used in {site.subject}" if site.expression else ""
        return site.diagnosis(
            "nonfinite_input",
            f"No op of this worker made these values: {site.op_type} brought "
            f"{_nonfinite_text(site.output)} from another worker or replica{used}",
            suggestion="open the runs of the other workers (r in the TUI; tfdbg-tui "
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
    diagnosis = site.diagnosis(
        "nonfinite_input",
        f"No op in the dump made these values: {what} already held "
        f"{_nonfinite_text(site.output)}{used}" + (f"; {found.text}" if found else ""),
        *(found.evidence if found else ()),
        suggestion=found.suggestion if found else None,
    )
    return replace(diagnosis, source=found)


def _singular_gradient(site: _Site) -> Diagnosis | None:
    if not site.is_gradient:
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
            f"which made {_nonfinite_text(site.output)} from {_inputs_state(site)}: "
            f"the forward op is at a singular point (log, sqrt, pow or a norm at 0)"
        )
    return site.diagnosis("singular_gradient", text)


def _log(site: _Site) -> Diagnosis | None:
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
    return site.diagnosis("log_of_nonpositive", text)


def _division(site: _Site) -> Diagnosis | None:
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
    return site.diagnosis("division_by_zero", text)


def _sqrt(site: _Site) -> Diagnosis | None:
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
    return site.diagnosis("sqrt_domain", text)


def _overflow(site: _Site) -> Diagnosis | None:
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
    return site.diagnosis(
        "overflow", text + _overflow_cause(site, dtype, limit), f"limit: {dtype} max {limit or '?'}"
    )


def _overflow_cause(site: _Site, dtype: str, limit: str | None) -> str:
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


def _inf_arithmetic(site: _Site) -> Diagnosis | None:
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
            return site.diagnosis(
                "inf_arithmetic",
                f"{site.subject} multiplied the infinity written into the program "
                f"({written[0]}, a mask's value) by {_count(zeros[0], 'exact zero')} of "
                f"its other input, and 0 * inf = NaN",
                suggestion="select instead of multiplying: tf.where(mask, x, -np.inf) "
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
    return site.diagnosis("inf_arithmetic", text)


# -- wording -----------------------------------------------------------------------------


def _inputs_state(site: _Site) -> str:
    known = [s for _, s in site.inputs if s is not None]
    if not site.inputs:
        return "no inputs"
    if not known:
        return "inputs whose values are not recorded"
    if len(known) < len(site.inputs):
        missing = len(site.inputs) - len(known)
        return (
            f"finite inputs and {missing} whose values are not recorded "
            f"(the non-finite values may have come in there)"
        )
    return "finite inputs"
