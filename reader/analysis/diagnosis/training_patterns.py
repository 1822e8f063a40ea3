"""Diagnosis rules that know training (what the run's steps, harm and trends say),
tried before the op's own (`op_patterns`; the order: `registry.RULES`).

Each pattern is one `Rule` entry of `RULES` (its pattern, label, usual fix and check);
each check is a small function of the `Site` (the run, the root cause, how the
explanation names the op) that returns a `Finding` (the explanation, the evidence it
used, its own fix when the case words one) or None. In order:

- ``loss_scale_collapse``: the loss scaler skipped a long stretch of steps
  (`reader.analysis.hunt.harm.LOSS_SCALE_COLLAPSE_STEPS`): the gradients are non-finite at
  any scale, the scale keeps falling and the weights never change.
- ``where_gradient_trap``: a gradient op went non-finite on the input of a forward op
  whose non-finite output a select discarded: ``tf.where`` hid it in the forward pass,
  not in the gradient (0 * inf = NaN).
- ``library_nan``: an op made inside library code (an optimizer's update) divided by
  zero: the function and the setting the user can change (an optimizer's ``epsilon``).
- ``divergence``: the op's inputs grew step after step until it overflowed (the
  largest magnitude per tensor, `Summary.max_abs`, of FULL_HEALTH dumps since format
  2.2, FULL_STATS and FULL_TENSOR: since which step and how fast).
- ``spike``: the same growth, but in one step from a flat trend (at most
  `SPIKE_MAX_TREND` x before it): not a training run that diverged but one step that
  went wrong; when the step's input batch jumped too (the outputs of the ops that
  deliver tf.data elements), the batch is named. It and ``divergence`` read one growth
  (computed once per site), and never both find theirs.
- ``domain_error``: an op outside its mathematical domain (acos, asin, atanh, acosh,
  lgamma, digamma, ..., and pow of a negative base, from the base's counts).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.diagnosis.rule import Finding, Rule, Site
from reader.analysis.diagnosis.wording import count_text, nonfinite_text, values_text
from reader.analysis.hunt.alerts import AlertBuilder
from reader.analysis.hunt.graph_ops import every_op
from reader.analysis.hunt.model_place import PlaceFinder, library_frame_text
from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS
from reader.model import RootCause, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# Ops and the domain outside which they give NaN or infinity.
DOMAINS = {
    "Acos": "[-1, 1]",
    "Asin": "[-1, 1]",
    "Atanh": "(-1, 1)",
    "Acosh": "[1, inf)",
    "Lgamma": "x > 0 or non-integer x < 0",
    "Digamma": "x > 0 or non-integer x < 0",
    "Polygamma": "x > 0",
    "Zeta": "x > 1",
    "Igamma": "a > 0, x >= 0",
    "Igammac": "a > 0, x >= 0",
    "Betainc": "a > 0, b > 0, 0 <= x <= 1",
    "Ndtri": "[0, 1]",
    "Erfinv": "[-1, 1]",
}
POW_DOMAIN = "x >= 0, or any x with an integer exponent"
_DIVISIONS = {"RealDiv": 1, "Div": 1, "Reciprocal": 0, "Inv": 0, "Xdivy": 1}
# A divergence: growth over at least this many values (a learning rate far too high
# overflows in three or four steps), by at least this factor overall.
DIVERGENCE_MIN_STEPS = 3
DIVERGENCE_MIN_GROWTH = 100.0
# Traces of one tensor read for its growth (the latest ones).
DIVERGENCE_MAX_TRACES = 4096
# A spike, not a divergence: the values grew at most this factor before the last step
# (a trend is growth spread over the steps; a learning rate far too high grows the
# values some tenfold or more every step).
SPIKE_MAX_TREND = 10.0
# A batch jumped with the spike: its largest magnitude at least this factor over the
# largest of the batches before it.
BATCH_JUMP = 100.0


def _output(cause: RootCause) -> Summary | None:
    if cause.trace is not None:
        return cause.trace.summary
    summaries = cause.execution.summaries or () if cause.execution is not None else ()
    return summaries[cause.alert.slot] if cause.alert.slot < len(summaries) else None


def _loss_scale_collapse(site: Site) -> Finding | None:
    reader = site.reader
    harm = reader.harm()
    if not harm.collapse_steps:
        return None
    first, last = harm.collapse_steps[0], harm.collapse_steps[-1]
    evidence = [
        f"steps {first}-{last}: every non-finite value was a gradient, and the "
        f"optimizer skipped the step",
        harm.loss_scale_evidence or "",
    ]
    culprit = ""
    rows = np.flatnonzero(reader.trace_steps_at(harm.graph_index) == harm.collapse_calls[-1])
    if rows.size:
        index = int(harm.graph_index[rows[0]])
        trace = reader.trace(index)
        summary = trace.summary
        counts = (
            (-1, -1, -1)
            if summary is None
            else tuple(
                -1 if c is None else c for c in (summary.nan, summary.neg_inf, summary.pos_inf)
            )
        )
        alert = AlertBuilder(reader).graph(index, trace.step, *counts)
        root = reader.root_cause(alert)
        if root is not None:
            name = f"{root.alert.op_type} '{root.alert.op_name}'"
            culprit = (
                f"; in step {last}, at the smallest scale, {name} still made "
                f"{nonfinite_text(_output(root))}"
            )
            evidence.append(f"step {last}: first non-finite gradient {name}")
    return Finding(
        f"The loss scaler skipped every step from {first} to {last} "
        f"({last - first + 1} steps): the gradients are non-finite whatever the scale, "
        f"so the scale keeps falling and the weights never change{culprit}",
        tuple(e for e in evidence if e),
    )


def _where_gradient_trap(site: Site) -> Finding | None:
    reader, cause = site.reader, site.cause
    op = cause.op
    if op is None or PlaceFinder(reader).phase_of_op(op) != "gradient":
        return None
    harm = reader.harm()
    read = {(ref.op_id, ref.slot) for ref in op.inputs if ref.op_id is not None}
    for group, containment in enumerate(harm.group_containment):
        if containment is None or containment.reason != "discarded":
            continue
        trace = reader.trace(int(harm.group_traces[group]))
        if trace.op_id is None:
            continue
        forward = reader.op(trace.op_id)
        if not read & {(ref.op_id, ref.slot) for ref in forward.inputs}:
            continue
        where = expression_of(reader, reader.innermost_user_frame(forward.stack_id))
        forward_text = f"`{where}`" if where else f"{forward.op_type} '{forward.name}'"
        return Finding(
            f"{site.subject} made {nonfinite_text(_output(cause))} in the gradient of "
            f"{forward.op_type} '{forward.name}', whose non-finite forward values a "
            f"select discarded ({forward_text}): tf.where computes both branches, and "
            f"the gradient of the branch it did not pick is 0 * inf = NaN",
            (
                f"forward {forward.op_type} '{forward.name}': discarded "
                f"({containment.explanation})",
                f"the gradient op {op.op_type} '{op.name}' reads the same input",
            ),
        )
    return None


def _library_nan(site: Site) -> Finding | None:
    reader, cause = site.reader, site.cause
    op = cause.op
    if op is None:
        return None
    place = PlaceFinder(reader).of_op(op)
    frame = place.library_frame
    position = _DIVISIONS.get(op.op_type)
    if frame is None or place.phase != "optimizer" or position is None:
        return None
    if position >= len(cause.inputs):
        return None
    ref, denominator = cause.inputs[position]
    if denominator is None or not denominator.zero:
        return None
    module = os.path.splitext(os.path.basename(frame.path))[0]
    optimizer = {
        "adam": "Adam",
        "adamw": "AdamW",
        "rmsprop": "RMSprop",
        "adagrad": "Adagrad",
        "adadelta": "Adadelta",
        "adamax": "Adamax",
        "nadam": "Nadam",
        "ftrl": "Ftrl",
        "lamb": "Lamb",
    }.get(module, module)
    return Finding(
        f"The optimizer {optimizer} made {nonfinite_text(_output(cause))} in its update "
        f"({library_frame_text(frame)}): it divided by "
        f"{count_text(denominator.zero, 'exact zero')} (denominator `{ref.name}`, "
        f"{values_text(denominator.size)}), the root of its second moment plus "
        f"`epsilon`, which is 0 only when epsilon is 0 and a gradient was exactly 0",
        (
            f"made by library code: {library_frame_text(frame)}",
            f"setting: epsilon (the denominator `{ref.name}` held zeros)",
        ),
        fix=f"give {optimizer} a positive epsilon (keras.optimizers.{optimizer}(epsilon=1e-7), "
        f"the default) rather than epsilon=0.0",
    )


class _Growth(NamedTuple):
    """How the op's fastest-growing input grew until the op overflowed."""

    name: str  # the input
    first: tuple[int, float]  # (step, magnitude) where the growth began
    last: tuple[int, float]  # ... where it ended, before the overflow
    before_last: tuple[int, float]  # ... one value before the end
    factor: float  # over the whole stretch
    rate: float  # per trace
    traces: int  # traces in the stretch
    unit: str  # "step", or "execution" in a run without steps
    since: int  # the step (or execution) of `first`
    at: int  # the step (or execution) of `last`

    @property
    def is_spike(self) -> bool:
        """Grown in one step from a flat trend: at most `SPIKE_MAX_TREND` x before it."""
        return self.before_last[1] <= self.first[1] * SPIKE_MAX_TREND


def _input_growth(site: Site) -> _Growth | None:
    """The growth of the op's input that grew most before the op overflowed to
    infinity, or None; computed once per site (`spike` and `divergence` both read it)."""
    if "growth" not in site.memo:
        site.memo["growth"] = _find_growth(site)
    found: _Growth | None = site.memo["growth"]
    return found


def _find_growth(site: Site) -> _Growth | None:
    reader, cause = site.reader, site.cause
    op, output = cause.op, _output(cause)
    if op is None or output is None or not (output.pos_inf or output.neg_inf):
        return None
    steps = reader.steps()
    best = None
    for ref, summary in cause.inputs:
        if ref.op_id is None or summary is None:
            continue
        growth = _growth(reader, ref.op_id, ref.slot, cause.trace.index if cause.trace else None)
        if growth is not None and (best is None or growth[2] > best[1][2]):
            best = (ref.name, growth)
    if best is None:
        return None
    name, (first, last, factor, rate, count, before_last) = best
    since = steps.of_execution(first[0]) if steps.has_steps else None
    at = steps.of_execution(last[0]) if steps.has_steps else None
    unit = "step" if since is not None else "execution"
    since = first[0] if since is None else since
    at = last[0] if at is None else at
    return _Growth(name, first, last, before_last, factor, rate, count, unit, since, at)


def _spike_check(site: Site) -> Finding | None:
    growth = _input_growth(site)
    if growth is None or not growth.is_spike:
        return None
    output = _output(site.cause)
    assert output is not None  # a growth is found only where the op overflowed
    return _spike(
        site.reader,
        site.subject,
        growth.name,
        growth.before_last,
        growth.last,
        growth.unit,
        growth.at,
        output,
    )


def _divergence(site: Site) -> Finding | None:
    growth = _input_growth(site)
    if growth is None or growth.is_spike:
        return None
    output = _output(site.cause)
    assert output is not None  # a growth is found only where the op overflowed
    name, first, last, _, factor, rate, count, unit, since, at = growth
    subject = site.subject
    if unit == "step" and at > since:
        # Per step, not per trace: a call that runs several batches (Keras'
        # steps_per_execution, a loop in the step function) traces the tensor as often.
        span = at - since
        pace = (
            f"about x{factor ** (1 / span):.3g} per step over {span} step{'s' if span != 1 else ''}"
        )
    elif unit == "step":
        pace = f"about x{rate:.3g} per run of the op over {count} runs in one step"
    else:
        pace = f"about x{rate:.3g} per execution over {count} executions"
    return Finding(
        f"Training diverged: the largest magnitude of {name}, an input of {subject}, grew "
        f"from {first[1]:.3g} at {unit} {since} to {last[1]:.3g} at {unit} {at}, {pace}, "
        f"until it overflowed to {nonfinite_text(output)}",
        (
            f"input {name}: max |x| {first[1]:.6g} at {unit} {since}, {last[1]:.6g} at "
            f"{unit} {at} (x{factor:.3g})",
        ),
    )


def _spike(
    reader: AnalysedRun,
    subject: str,
    name: str,
    before: tuple[int, float],
    last: tuple[int, float],
    unit: str,
    at: int,
    output: Summary,
) -> Finding:
    """A jump in one step: the input's magnitude before and at that step, and the
    step's batch when it jumped too."""
    jump = last[1] / before[1] if before[1] > 0 else math.inf
    text = (
        f"One step went wrong, not the training: the largest magnitude of {name}, "
        f"an input of {subject}, jumped from {before[1]:.3g} to {last[1]:.3g} "
        f"(x{jump:.3g}) in {unit} {at}, after steps of little growth, until it "
        f"overflowed to {nonfinite_text(output)}"
    )
    evidence = [f"input {name}: max |x| {before[1]:.6g}, then {last[1]:.6g} at {unit} {at}"]
    batch = _batch_jump(reader, last[0])
    if batch is not None:
        tensor, value, earlier = batch
        text += (
            f"; the batch of that {unit} held values up to {value:.3g} ({tensor}; "
            f"the batches before it at most {earlier:.3g})"
        )
        evidence.append(
            f"input batch {tensor}: max |x| {value:.6g} at {unit} {at}, at "
            f"most {earlier:.6g} before"
        )
        suggestion = (
            "look at that batch's data: filter or clip out-of-range samples, "
            "normalise the inputs; gradient clipping does not help once a "
            "norm itself overflows"
        )
    else:
        suggestion = (
            "look at what changed in that step (its batch, a learning-rate "
            "schedule, a restored or reset variable); clip values "
            "(clipvalue) rather than norms, which overflow themselves"
        )
    return Finding(text, tuple(evidence), fix=suggestion)


def _batch_jump(reader: AnalysedRun, step: int) -> tuple[str, float, float] | None:
    """The delivered tf.data batch of ``step`` (a trace's step) whose largest magnitude
    jumped at least `BATCH_JUMP` x over the largest of its earlier batches: (tensor,
    its magnitude, the earlier largest), or None."""
    for op in every_op(reader):
        if op.op_type not in DATASET_DELIVERY_OPS:
            continue
        for slot in range(len(op.trace_points)):
            traces = reader.traces_of(op.id, slot)[-DIVERGENCE_MAX_TRACES:]
            now, earlier = None, 0.0
            for index in traces.tolist():
                trace = reader.trace(index)
                magnitude = trace.summary.max_abs if trace.summary else None
                if magnitude is None:
                    continue
                if trace.step == step:
                    now = magnitude if now is None else max(now, magnitude)
                elif trace.step is not None and trace.step < step:
                    earlier = max(earlier, magnitude)
            if now is not None and earlier > 0 and now >= BATCH_JUMP * earlier:
                return f"{op.name}:{slot}", now, earlier
    return None


def _growth(
    reader: AnalysedRun, op_id: int, slot: int, before: int | None
) -> tuple[tuple[int, float], tuple[int, float], float, float, int, tuple[int, float]] | None:
    """The trailing stretch over which a tensor's largest finite magnitude grew:
    ((step, magnitude) at its start, at its end, the overall factor, the factor per
    trace, the number of traces, (step, magnitude) before its end), or None when it
    did not grow enough."""
    traces = reader.traces_of(op_id, slot)
    if before is not None:
        traces = traces[traces < before]
    traces = traces[-DIVERGENCE_MAX_TRACES:]
    points = []
    for index in traces.tolist():
        trace = reader.trace(index)
        if trace.summary is None or trace.summary.max_abs is None:
            continue
        points.append((trace.step, trace.summary.max_abs))
    if len(points) < DIVERGENCE_MIN_STEPS:
        return None
    start = len(points) - 1
    while start > 0 and points[start - 1][1] < points[start][1]:
        start -= 1
    stretch = points[start:]
    if len(stretch) < DIVERGENCE_MIN_STEPS or stretch[0][1] <= 0:
        return None
    factor = stretch[-1][1] / stretch[0][1]
    if not factor >= DIVERGENCE_MIN_GROWTH or not math.isfinite(factor):
        return None
    rate = factor ** (1 / (len(stretch) - 1))
    return stretch[0], stretch[-1], factor, rate, len(stretch), stretch[-2]


def _domain_error(site: Site) -> Finding | None:
    cause, subject = site.cause, site.subject
    if cause.alert.op_type == "Pow":
        return _negative_base(site)
    domain = DOMAINS.get(cause.alert.op_type)
    if domain is None:
        return None
    summary = cause.inputs[0][1] if cause.inputs else None
    stats = ""
    if summary is not None and summary.min is not None and summary.max is not None:
        stats = f"; its input ranged from {summary.min:.9g} to {summary.max:.9g}"
    name = cause.alert.op_type.lower()
    return Finding.fitted(
        site,
        f"{subject} made {nonfinite_text(_output(cause))}: {name} is defined on "
        f"{domain} only, and an input lay outside it{stats} (rounding can push a value "
        f"computed to be 1 just past it)",
        (f"domain of {name}: {domain}",),
    )


def _negative_base(site: Site) -> Finding | None:
    """``pow(x, y)`` made NaN from a negative base (a negative base has a real power
    only for an integer exponent); None unless the counts show it."""
    cause, subject = site.cause, site.subject
    base = cause.inputs[0][1] if cause.inputs else None
    output = _output(cause)
    if base is None or not base.neg or output is None or not output.nan:
        return None
    return Finding.fitted(
        site,
        f"{subject} made {nonfinite_text(output)}: pow(x, y) is defined for a negative "
        f"base x only when the exponent y is an integer, and its base held "
        f"{count_text(base.neg, 'negative value')} among {values_text(base.size)}",
        (f"domain of pow: {POW_DOMAIN}",),
    )


# The patterns that know training, in the order they are tried (before the op's own:
# `registry.RULES`); the first check that finds its pattern names the diagnosis.
RULES = (
    Rule(
        "loss_scale_collapse",
        "loss scale collapse",
        fix="find the op whose gradient is non-finite at any scale (select an alert of the "
        "last skipped step for its diagnosis) and fix it, or keep it in float32 "
        "(dtype='float32' on its layer)",
        check=_loss_scale_collapse,
    ),
    Rule(
        "where_gradient_trap",
        "tf.where gradient trap",
        fix="make the input safe before the op (the double tf.where): "
        "safe = tf.where(cond, x, 1.0); tf.where(cond, tf.math.log(safe), 0.0)",
        check=_where_gradient_trap,
    ),
    Rule(
        "library_nan",
        "made in library code",
        fix="give the optimizer a positive epsilon (the default, 1e-7) rather than epsilon=0.0",
        check=_library_nan,
    ),
    Rule(
        "divergence",
        "divergence",
        fix="lower the learning rate, clip gradients (clipnorm=1.0 on the optimizer, or "
        "tf.clip_by_global_norm), and normalise the inputs",
        check=_divergence,
    ),
    Rule(
        "spike",
        "one step's spike",
        fix="look at what changed in that step (its batch, a learning-rate "
        "schedule, a restored or reset variable); clip values "
        "(clipvalue) rather than norms, which overflow themselves",
        check=_spike_check,
    ),
    Rule(
        "domain_error",
        "outside the domain",
        fix="clip the input into the op's domain (the explanation names it) before the op",
        check=_domain_error,
    ),
)
