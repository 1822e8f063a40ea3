"""Contained (deliberate, discarded, loss_scale) and harmful non-finite values: which
NaN or infinity did the harm, per alert, by an ordered list of containment rules with
their evidence.

Programs make infinities on purpose (an attention mask written as ``-inf``), a dynamic
loss scale overflows its first gradients by design, and ``tf.where`` computes both
branches. Every alert is **contained**, with a reason from `CONTAINED_REASONS`, or
**harmful**; the root cause, the landing and the diagnosis are the first harmful one.

The classification is an ordered list of containment rules (`GROUP_RULES`), each a
small function that returns a `Containment` (its reason, what it means, the evidence
it used) or None. Rules see one *group* at a time: the alerts of one traced tensor
that agree on whether they held NaN. A group is classified once, from its first trace,
and the answer applies to every alert of the group, so the cost grows with the number
of distinct alerting tensors, not with the number of alerts (numpy does the rest).
The loss-scale rule decides per step instead (`_loss_scale_steps`). They are not the
diagnosis' `Rule`s (`reader.analysis.diagnosis.registry`): they say whether a value did
harm, per group and below the diagnosis, which reads their verdict (``contained``).

- ``deliberate``: a constant holding an infinity (``-np.inf`` in ``tf.where``, the
  value of ``tf.fill``), and what only carries such infinities on without making a
  NaN (a select, a max, a reshape...), as long as none of it reaches a variable write
  or the function's output: there the infinity escaped, and the chain is harmful.
- ``discarded``: a tensor whose only readers are selects that did not pick its
  non-finite elements (their output was finite), ops that read no values
  (``ZerosLike``, ``Shape``), and gradient kernels that make a zero of a zero gradient
  whatever the value (``SqrtGrad``: the backward pass of ``tf.where`` over
  ``tf.sqrt``), their output finite too.
- ``loss_scale``: under a dynamic loss scale (Keras' ``LossScaleOptimizer``), a step
  whose non-finite values were all gradients (and the gradients handed to the
  scaler's branch): the optimizer skipped that step and lowered the scale. A stretch
  of at least `LOSS_SCALE_COLLAPSE_STEPS` such steps is not contained: the scale
  keeps falling and training has stopped (`HarmVerdict.collapse_steps`).

What each mode allows: FULL_HEALTH, CONCISE_HEALTH, FULL_STATS and FULL_TENSOR count
NaN apart from infinities, so a deliberate infinity is followed through any op that
makes no NaN of it. CURT_HEALTH says only "has NaN or inf": a deliberate infinity is
followed only through ops that cannot turn infinities into NaN (`_INF_CARRIERS`), and
the other rules work as in the counting modes. Eager alerts are always harmful.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from reader.analysis.hunt.inputs import input_trace
from reader.analysis.hunt.loss_scale import LOSS_SCALE_NAME, loss_scale_variables
from reader.analysis.hunt.model_place import PlaceFinder
from reader.errors import DumpError
from reader.model import CONTAINED_REASONS, HARMFUL, Alert, Op, alert_type_of

if TYPE_CHECKING:
    from reader.analysis.hunt.steps import Steps
    from reader.run.run_protocol import Run

# Consecutive steps skipped by the loss scaler beyond which its scale is collapsing:
# a healthy scaler needs about log2(initial scale / a workable scale) of them, well
# under 20 from Keras' default initial scale of 2**15.
LOSS_SCALE_COLLAPSE_STEPS = 20

# Ops that output the infinities written into the program.
_CONSTANT_OPS = frozenset({"Const", "HostConst"})
# Ops that carry an input's infinities to their output and cannot make a NaN of them.
_INF_CARRIERS = frozenset(
    {
        "Select",
        "SelectV2",
        "Max",
        "Min",
        "Maximum",
        "Minimum",
        "Identity",
        "Reshape",
        "ExpandDims",
        "Squeeze",
        "Transpose",
        "ConcatV2",
        "Concat",
        "GatherV2",
        "Gather",
        "StridedSlice",
        "Slice",
        "Tile",
        "BroadcastTo",
        "Fill",
        "Pack",
        "Unpack",
        "Cast",
        "Neg",
        "Pad",
        "PadV2",
        "Split",
        "SplitV",
        "Reverse",
        "ReverseV2",
        "Snapshot",
        "EnsureShape",
        "Cumsum",
    }
)
_SELECT_OPS = frozenset({"Select", "SelectV2"})
# Gradient kernels that give 0 where the incoming gradient (input 1) is 0, whatever the
# forward output (input 0) holds (TensorFlow's SqrtGrad, RsqrtGrad, ReciprocalGrad):
# the branch a select did not pick gets a zero gradient, so they take its non-finite
# values in and give none out (`tf.where(x > 0, tf.sqrt(x), 0.0)` trains finite).
_ZERO_GRADIENT_SAFE_OPS = frozenset({"SqrtGrad", "RsqrtGrad", "ReciprocalGrad", "InvGrad"})
# Readers of a tensor that look at its shape or type only, or test it for finiteness.
_VALUE_BLIND_OPS = frozenset(
    {
        "Shape",
        "ShapeN",
        "Size",
        "Rank",
        "ZerosLike",
        "OnesLike",
        "IsFinite",
        "IsNan",
        "IsInf",
        "CheckNumerics",
        "CheckNumericsV2",
    }
)
# Ops that write a variable: a non-finite value reaching one did harm.
_VARIABLE_WRITES = (
    "Assign",
    "ResourceApply",
    "ResourceSparseApply",
    "ResourceScatter",
    "Apply",
    "ScatterUpdate",
)
# Graph names that say a dynamic loss scale is in the run.
_LOSS_SCALE_MARKS = ("loss_scale", "lossscale", "dynamic_scale")


@dataclass(frozen=True, slots=True)
class Containment:
    """Why a non-finite value did no harm.

    Attributes:
        reason: One of `CONTAINED_REASONS`.
        explanation: What happened to the value, in the user's terms.
        evidence: The facts the rule used, one line each.
    """

    reason: str
    explanation: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class HarmVerdict:
    """Every alert of a run, contained or harmful.

    Attributes:
        graph_index: Ascending trace indices of the graph alerts.
        graph_codes: Per graph alert, `HARMFUL` or 1 + its reason's position.
        graph_groups: Per graph alert, its group (row of `group_containment`).
        group_containment: Per group, its `Containment`, or None (harmful).
        group_traces: Per group, the trace its rules looked at (its first).
        eager_index, eager_slot: The eager alerts, as the execution index lists them.
        eager_codes: Per eager alert, its code (always `HARMFUL`).
        skipped_steps: Execution indices of the step calls the loss scaler skipped.
        collapse_steps: Step numbers of a run of skipped steps too long to be healthy.
        collapse_calls: Their execution indices.
        skipped_step_numbers: The step numbers of `skipped_steps`.
        loss_scale_evidence: What says the run has a dynamic loss scale.
    """

    graph_index: np.ndarray
    graph_codes: np.ndarray
    graph_groups: np.ndarray
    group_containment: list[Containment | None]
    group_traces: np.ndarray
    eager_index: np.ndarray
    eager_slot: np.ndarray
    eager_codes: np.ndarray
    skipped_steps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    collapse_steps: tuple[int, ...] = ()
    collapse_calls: tuple[int, ...] = ()
    skipped_step_numbers: tuple[int, ...] = ()
    loss_scale_evidence: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        """Contained alerts per reason (every reason, 0 included)."""
        both = np.concatenate([self.graph_codes, self.eager_codes]).astype(np.int64)
        found = np.bincount(both, minlength=len(CONTAINED_REASONS) + 1)
        return {reason: int(found[i + 1]) for i, reason in enumerate(CONTAINED_REASONS)}

    @property
    def harmful(self) -> int:
        """How many alerts are harmful."""
        return int((self.graph_codes == HARMFUL).sum() + (self.eager_codes == HARMFUL).sum())

    def of_trace(self, index: int) -> Containment | None:
        """The containment of graph alert ``index``; None when harmful or no alert."""
        row = int(np.searchsorted(self.graph_index, index))
        if row >= self.graph_index.size or self.graph_index[row] != index:
            return None
        code = int(self.graph_codes[row])
        if code == HARMFUL:
            return None
        group = self.group_containment[int(self.graph_groups[row])]
        if group is not None and CONTAINED_REASONS[code - 1] == group.reason:
            return group
        return _LOSS_SCALE

    def is_contained_trace(self, index: int) -> bool:
        return self.of_trace(index) is not None

    def of_alert(self, alert: Alert) -> Containment | None:
        return self.of_trace(alert.index) if alert.kind == "graph" else None


_LOSS_SCALE = Containment(
    "loss_scale",
    "a gradient that overflowed under the dynamic loss scale, in a step the "
    "optimizer skipped (it lowered the scale instead), as designed",
)


def classify(
    reader: Run,
    index: np.ndarray,
    step: np.ndarray,
    counts: np.ndarray,
    tps: np.ndarray,
    eager_index: np.ndarray,
    eager_slot: np.ndarray,
    steps: Callable[[], Steps],
) -> HarmVerdict:
    """Classify every alert of a run.

    Args:
        reader: The run's record queries.
        index, step, counts, tps: The graph alerts' columns: trace index (ascending),
            step (top-level execution), (n, 3) NaN/-inf/+inf counts (-1: not counted),
            trace point.
        eager_index, eager_slot: The eager alerts.
        steps: Makes the run's steps (the loss scale's consecutive skipped steps),
            asked only in a run with a loss scale.
    """
    nan_flag = (
        np.where(counts[:, 0] < 0, 2, counts[:, 0] > 0).astype(np.int64)
        if counts.size
        else np.empty(0, np.int64)
    )
    keys = tps.astype(np.int64) * 3 + nan_flag
    unique, first_rows, groups = np.unique(keys, return_index=True, return_inverse=True)
    groups = groups.reshape(-1)
    context = _Context(reader, index, groups, first_rows, nan_flag, counts)
    containment = [context.classify(g) for g in range(unique.size)]
    context.release_escaped(containment)
    codes = np.array(
        [HARMFUL if c is None else CONTAINED_REASONS.index(c.reason) + 1 for c in containment],
        dtype=np.int8,
    )
    graph_codes = codes[groups] if groups.size else np.empty(0, np.int8)

    group_traces = index[first_rows] if index.size else np.empty(0, np.int64)
    verdict = HarmVerdict(
        index,
        graph_codes,
        groups,
        containment,
        group_traces,
        eager_index,
        eager_slot,
        np.zeros(eager_index.size, np.int8),
    )
    marks = _loss_scale_marks(reader)
    if marks is None or not index.size:
        return verdict
    gradient_side = np.array([context.gradient_side(g) for g in range(unique.size)], dtype=bool)
    skipped, numbers, collapse, collapse_calls = _loss_scale_steps(
        step, gradient_side[groups], steps()
    )
    in_skipped = np.isin(step, skipped) & (graph_codes == HARMFUL)
    graph_codes = graph_codes.copy()
    graph_codes[in_skipped] = CONTAINED_REASONS.index("loss_scale") + 1
    return HarmVerdict(
        index,
        graph_codes,
        groups,
        containment,
        group_traces,
        eager_index,
        eager_slot,
        verdict.eager_codes,
        skipped,
        collapse,
        collapse_calls,
        numbers,
        marks,
    )


class _Context:
    """The groups of one classification and what the rules ask of the dump."""

    def __init__(
        self,
        reader: Run,
        index: np.ndarray,
        groups: np.ndarray,
        first_rows: np.ndarray,
        nan_flag: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        self.reader = reader
        self.index = index
        self.groups = groups
        self.first_rows = first_rows
        self.nan_flag = nan_flag
        self.counts = counts
        self.places = PlaceFinder(reader)
        self._done: dict[int, Containment | None] = {}
        # Deliberate groups and the deliberate groups they carry on.
        self.carried: dict[int, list[int]] = {}
        self.escaped: set[int] = set()

    # -- what a rule sees of a group -------------------------------------------------

    def trace_index(self, group: int) -> int:
        return int(self.index[self.first_rows[group]])

    def op_of(self, group: int) -> tuple[Op, int] | None:
        try:
            trace = self.reader.trace(self.trace_index(group))
            if trace.op_id is None:
                return None
            return self.reader.op(trace.op_id), trace.slot
        except DumpError:
            return None

    def has_nan(self, group: int) -> bool | None:
        flag = int(self.nan_flag[self.first_rows[group]])
        return None if flag == 2 else bool(flag)

    def nonfinite_text(self, group: int) -> str:
        nan, neg, pos = (int(c) for c in self.counts[self.first_rows[group]])
        return "NaN or infinity" if nan < 0 else alert_type_of(nan, neg, pos)

    def group_of_trace(self, trace_index: int) -> int | None:
        row = int(np.searchsorted(self.index, trace_index))
        if row < self.index.size and self.index[row] == trace_index:
            return int(self.groups[row])
        return None

    def nonfinite_inputs(self, group: int, op: Op) -> list[tuple[str, int]]:
        """(name, group) of each input that held NaN or inf where ``group``'s first
        trace read it."""
        at = self.trace_index(group)
        found = []
        for ref in op.inputs:
            if ref.op_id is None or ref.name.startswith("^"):
                continue
            trace = input_trace(self.reader, ref.op_id, ref.slot, at)
            if trace is None:
                continue
            input_group = self.group_of_trace(trace)
            if input_group is not None:
                found.append((ref.name, input_group))
        return found

    def readers(self, op: Op, slot: int) -> list[tuple[Op, int]]:
        """(op, input position) of every op reading output ``slot`` of ``op``."""
        return [
            (c, position)
            for c, position in self.reader.consumers(op.id)
            if position < len(c.inputs)
            and c.inputs[position].op_id == op.id
            and c.inputs[position].slot == slot
        ]

    def gradient_side(self, group: int) -> bool:
        """Whether a group's tensor is a gradient, or a gradient handed to a branch."""
        found = self.op_of(group)
        if found is None:
            return False
        op, _ = found
        place = self.places.of_op(op)
        if place.phase == "gradient":
            return True
        return op.op_type == "Placeholder" and place.phase == "optimizer"

    # -- classification --------------------------------------------------------------

    def classify(self, group: int) -> Containment | None:
        if group in self._done:
            return self._done[group]
        self._done[group] = None  # a cycle through non-finite tensors is harmful
        found = None
        for rule in GROUP_RULES:
            found = rule(self, group)
            if found is not None:
                break
        self._done[group] = found
        return found

    def release_escaped(self, containment: list[Containment | None]) -> None:
        """A deliberate infinity that escaped makes its whole chain harmful."""
        pending = list(self.escaped)
        while pending:
            group = pending.pop()
            found = containment[group]
            if found is None or found.reason != "deliberate":
                continue
            containment[group] = None
            pending.extend(self.carried.get(group, ()))
        # A chain's later members are harmful too when an earlier one escaped.
        changed = True
        while changed:
            changed = False
            for group, sources in self.carried.items():
                if containment[group] is not None and any(containment[s] is None for s in sources):
                    containment[group] = None
                    changed = True


# -- the containment rules, in order: each returns a Containment or None ------------------


def _deliberate(context: _Context, group: int) -> Containment | None:
    found = context.op_of(group)
    if found is None or context.has_nan(group):
        return None
    op, slot = found
    what = context.nonfinite_text(group)
    if op.constant_nan:
        return None  # a NaN written into the program is never deliberate
    if op.op_type in _CONSTANT_OPS:
        explanation = f"the constant '{op.name}' holds {what}, written into the program"
        evidence = [f"{op.op_type} '{op.name}': {what}"]
        sources: list[int] = []
    else:
        inputs = context.nonfinite_inputs(group, op)
        if not inputs:
            return None
        if context.has_nan(group) is None and op.op_type not in _INF_CARRIERS:
            return None  # CURT_HEALTH cannot tell whether this op made a NaN
        sources = [g for _, g in inputs]
        if any((c := context.classify(g)) is None or c.reason != "deliberate" for g in sources):
            return None
        names = ", ".join(name for name, _ in inputs)
        explanation = (
            f"{op.op_type} '{op.name}' carried the deliberate infinities of "
            f"{names} on, without making a NaN"
        )
        evidence = [f"input {name}: deliberate" for name, _ in inputs]
        evidence.append(f"output '{op.name}:{slot}': {what}, no NaN")
    context.carried[group] = sources
    escape = _escape(context, op, slot)
    if escape is not None:
        context.escaped.add(group)
    return Containment("deliberate", explanation, tuple(evidence))


def _escape(context: _Context, op: Op, slot: int) -> str | None:
    """How a tensor leaves the computation non-finite (a variable write, the
    function's output), or None when only ops of the graph read it."""
    readers = context.readers(op, slot)
    if not readers:
        return "it is the function's output"
    for reader_op, _ in readers:
        if reader_op.op_type.startswith(_VARIABLE_WRITES):
            return f"{reader_op.op_type} '{reader_op.name}' writes it to a variable"
    return None


def _discarded(context: _Context, group: int) -> Containment | None:
    found = context.op_of(group)
    if found is None:
        return None
    op, slot = found
    at = context.trace_index(group)
    selects, gradients = [], []
    for reader_op, position in context.readers(op, slot):
        if reader_op.op_type in _VALUE_BLIND_OPS:
            continue
        if reader_op.op_type in _SELECT_OPS and position != 0:
            selects.append(reader_op)
        elif reader_op.op_type in _ZERO_GRADIENT_SAFE_OPS and position == 0:
            gradients.append(reader_op)
        else:
            return None
        picked = context.reader.nearest_trace_of(reader_op.id, 0, at, after=True)
        if picked is None or picked < at or context.group_of_trace(picked) is not None:
            return None  # not traced, or it let the non-finite values through
    if not selects:
        return None
    names = ", ".join(f"{s.op_type} '{s.name}'" for s in selects)
    meaning = f"{names} did not pick these values: its output was finite"
    if gradients:
        gradient_names = ", ".join(f"{g.op_type} '{g.name}'" for g in gradients)
        meaning += f"; {gradient_names} made zeros of them (their gradient there was zero)"
    return Containment(
        "discarded",
        meaning,
        (
            f"'{op.name}:{slot}': {context.nonfinite_text(group)}",
            *(f"{s.op_type} '{s.name}': finite output" for s in selects + gradients),
        ),
    )


GROUP_RULES = (_deliberate, _discarded)


# -- the loss scale: a decision per step -----------------------------------------------------


def _loss_scale_marks(reader: Run) -> str | None:
    """What says the run has a dynamic loss scale (a graph of its, or a variable read
    to unscale the gradients), or None."""
    for graph in reader.graphs():
        name = (graph.name or "").lower()
        if any(mark in name for mark in _LOSS_SCALE_MARKS):
            return f"graph '{graph.name}' of a dynamic loss scale"
    # A scaler built before the function was first traced names its branches
    # `cond_true_N`: find its variable by what it does instead.
    found = loss_scale_variables(reader)
    named = [name for name in found if any(LOSS_SCALE_NAME.match(part) for part in name.split("/"))]
    if named:
        return f"variable '{named[0]}' of a dynamic loss scale"
    if found:
        return "a variable read to divide the gradients (a dynamic loss scale unscaling them)"
    return None


def _loss_scale_steps(
    step: np.ndarray, gradient_side: np.ndarray, steps: Steps
) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The steps the loss scaler skipped (execution indices), their step numbers, and
    the step numbers and execution indices of a collapse (a stretch of
    `LOSS_SCALE_COLLAPSE_STEPS` or more, which is then not skipped but harmful)."""
    calls, position = np.unique(step, return_inverse=True)
    not_gradient = np.bincount(position.reshape(-1), weights=~gradient_side, minlength=calls.size)
    skipped = calls[not_gradient == 0]
    if not steps.has_steps or not skipped.size:
        return skipped, (), (), ()
    numbers = steps.of_executions(skipped)
    valid = numbers >= 0
    skipped, numbers = skipped[valid], numbers[valid]
    collapse: list[int] = []
    start = 0
    for i in range(1, numbers.size + 1):
        if i == numbers.size or numbers[i] != numbers[i - 1] + 1:
            if i - start >= LOSS_SCALE_COLLAPSE_STEPS:
                collapse.extend(int(n) for n in numbers[start:i])
            start = i
    keep = ~np.isin(numbers, collapse)
    return (
        skipped[keep],
        tuple(int(n) for n in numbers[keep]),
        tuple(collapse),
        tuple(int(c) for c in skipped[~keep]),
    )
