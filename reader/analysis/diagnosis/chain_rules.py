"""The origins of bad finite values: one rule per kind of op that makes them.

The chain (`reader.analysis.diagnosis.chain`) walks upstream from the root cause
through its inputs' summaries; at each op it tries `RULES` in order, and the first
that finds its kind there is the origin: where the exact zeros, the values at the edge
of a domain or the huge magnitudes that the root cause then turned non-finite were made.
Each rule reads only the op's type, dtypes and the summaries of its output and inputs
(and, under a tf.distribute strategy, of the same op on the other replicas), and says
what it read (its evidence). Adding a kind is adding one `OriginRule` entry and a case
of tests/programs/chains.py.

An origin can also lie outside the graph path upstream of the root cause: in the run's
state from step to step (the optimizer's learning rate, whose updates reach the root
cause through the weights). Those are `RunOriginRule` entries of `RUN_RULES`, each
tried for the diagnosis patterns it explains, before the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reader.analysis.diagnosis.learning_rate import LearningRate, learning_rate
from reader.analysis.diagnosis.wording import count_text, evidence_line
from reader.model import RootCause, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

SATURATING_OPS = frozenset({"Sigmoid", "Tanh", "Softmax"})
RELU_OPS = frozenset({"Relu", "Relu6"})
EXP_OPS = frozenset({"Exp"})
# Float dtypes by bits of precision (significand), then range: a cast to a smaller one
# rounds.
FLOAT_PRECISION = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}
INTEGER_DTYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
)
# TensorFlow's `/` (math_ops.truediv) names the casts of integer operands in this scope.
TRUEDIV_SCOPE = "truediv"
# One replica's copy of an op made what the others did not: values at least this
# factor larger than the largest of theirs.
REPLICA_MAGNITUDE_GAP = 100.0
# A learning rate that rose up to the divergence: over at least this many values (the
# last one before the root cause among them), by at least this factor overall.
LR_RISE_MIN_VALUES = 3
LR_RISE_MIN_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class ChainNode:
    """One op on the way upstream, as the rules see it.

    Attributes:
        op_type: The op's type.
        name: The graph op's name (None for an eager op).
        output: The summary of the output the walk came through.
        output_dtype: Its dtype.
        inputs: Each input's (tensor name, summary, dtype), where the dump has them.
        replica: Under a tf.distribute strategy, the replica whose copy of the op this
            is (TensorFlow names replica n's ops ``replica_<n>/...``, replica 0's
            without a prefix); None for an op that is not replicated.
        counterparts: The other replicas' copies of the same output in the same step:
            (replica, summary) each.
        root: The root cause's node (None for the root cause itself).
    """

    op_type: str
    name: str | None
    output: Summary | None
    output_dtype: str | None
    inputs: tuple[tuple[str, Summary | None, str | None], ...]
    replica: int | None = None
    counterparts: tuple[tuple[int, Summary | None], ...] = ()
    root: ChainNode | None = None

    @property
    def others_finite(self) -> bool:
        """Whether the op is replicated and every other replica's copy of its output is
        recorded and finite."""
        return bool(self.counterparts) and all(
            s is not None and not s.is_alert for _, s in self.counterparts
        )

    @property
    def others_text(self) -> str:
        """The other replicas, possessive: "replica 0's", "replica 0's and replica 2's"."""
        return " and ".join(f"replica {r}'s" for r, _ in self.counterparts)


@dataclass(frozen=True, slots=True)
class Origin:
    """What an origin rule found: why the op made the bad finite values (a clause:
    "saturated to exactly 1.0 in 36 values"), and the evidence it read."""

    why: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OriginRule:
    """One kind of origin: its id (``diagnosis.chain``'s origin kind), a short label,
    and the check of a `ChainNode`."""

    kind: str
    label: str
    check: Callable[[ChainNode], Origin | None]


@dataclass(frozen=True, slots=True)
class RunOrigin:
    """What a run rule found: the op whose output it read (its id, output slot and the
    trace nearest the root cause), why, and the evidence."""

    op_id: int
    slot: int
    trace: int
    why: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RunOriginRule:
    """One kind of origin in the run's state from step to step: its id, a short label,
    the diagnosis patterns it explains (it is tried for those only), the fix that
    replaces the pattern's when it is found, and the check of the run and root cause."""

    kind: str
    label: str
    patterns: frozenset[str]
    fix: str
    find: Callable[[AnalysedRun, RootCause], RunOrigin | None]


def _at_one(summary: Summary) -> bool:
    """Whether the summary shows a value of magnitude exactly 1 (FULL_STATS' max, or
    FULL_HEALTH's largest magnitude)."""
    if summary.max is not None:
        return summary.max == 1.0 or (summary.min is not None and summary.min == -1.0)
    return summary.max_abs == 1.0


def _saturation(node: ChainNode) -> Origin | None:
    out = node.output
    if node.op_type not in SATURATING_OPS or out is None:
        return None
    parts = []
    if out.zero and node.op_type != "Tanh":
        parts.append(f"to exactly 0 in {count_text(out.zero, 'value')}")
    if _at_one(out):
        parts.append("to exactly 1.0" if node.op_type != "Tanh" else "to exactly ±1.0")
    if not parts:
        return None
    function = node.op_type.lower()
    return Origin(
        f"saturated {' and '.join(parts)}: {function} is never exactly "
        f"{'0 or 1' if node.op_type != 'Tanh' else '±1'} in exact arithmetic, but in "
        f"{node.output_dtype or 'float'} its large inputs round there",
        (evidence_line(f"{node.op_type} output", out),),
    )


def _cast_rounding(node: ChainNode) -> Origin | None:
    out = node.output
    if node.op_type != "Cast" or out is None or not node.inputs:
        return None
    name, source, source_dtype = node.inputs[0]
    target = node.output_dtype
    if (
        source is None
        or source_dtype not in FLOAT_PRECISION
        or target not in FLOAT_PRECISION
        or FLOAT_PRECISION[target] >= FLOAT_PRECISION[source_dtype]
    ):
        return None
    evidence = (evidence_line(f"Cast input `{name}`", source), evidence_line("Cast output", out))
    if out.zero is not None and source.zero is not None and out.zero > source.zero:
        made = out.zero - source.zero
        return Origin(
            f"rounded {count_text(made, 'small value')} to exactly 0 casting "
            f"{source_dtype} to {target}",
            evidence,
        )
    if _at_one(out) and not _at_one(source):
        return Origin(
            f"rounded values near 1 to exactly 1.0 casting {source_dtype} to {target} "
            f"({target} has {FLOAT_PRECISION[target]} significant bits)",
            evidence,
        )
    return None


def _exp_underflow(node: ChainNode) -> Origin | None:
    out = node.output
    if node.op_type not in EXP_OPS or out is None or not out.zero:
        return None
    _, x, _ = node.inputs[0] if node.inputs else ("", None, None)
    low = f" (its input went down to {x.min:.6g})" if x is not None and x.min is not None else ""
    return Origin(
        f"underflowed to exactly 0 in {count_text(out.zero, 'value')}{low}: exp of a large "
        f"negative number is below {out.dtype or 'the dtype'}'s smallest value",
        (evidence_line("Exp output", out),),
    )


def _dead_relu(node: ChainNode) -> Origin | None:
    out = node.output
    if node.op_type not in RELU_OPS or out is None or not out.size or out.zero != out.size:
        return None
    return Origin(
        f"output 0 for all {count_text(out.size, 'unit')}: the ReLUs are dead (every "
        f"pre-activation was at or below 0, so no gradient flows back to revive them)",
        (evidence_line(f"{node.op_type} output", out),),
    )


def _integer_division(node: ChainNode) -> Origin | None:
    out = node.output
    if node.op_type != "Cast" or out is None or not node.inputs:
        return None
    _, _, source_dtype = node.inputs[0]
    scopes = (node.name or "").split("/")[:-1]
    if source_dtype not in INTEGER_DTYPES or not any(
        s.rsplit("_", 1)[0] == TRUEDIV_SCOPE or s == TRUEDIV_SCOPE for s in scopes
    ):
        return None
    zeros = f", and it held {count_text(out.zero, 'zero')}" if out.zero else ""
    return Origin(
        f"`/` on {source_dtype} values: TensorFlow cast them to {node.output_dtype} "
        f"to divide (a silent float64 column){zeros}",
        (evidence_line(f"Cast {source_dtype} -> {node.output_dtype}", out),),
    )


def _one_replica(node: ChainNode) -> Origin | None:
    """Under a tf.distribute strategy: the root cause went non-finite on one replica
    only, and this op's copy on that replica made what the other replicas' copies did
    not (exact zeros, negatives, or magnitudes `REPLICA_MAGNITUDE_GAP` x theirs)."""
    out, root = node.output, node.root
    if node.replica is None or out is None or root is None or root.replica != node.replica:
        return None
    others = [s for _, s in node.counterparts if s is not None]
    if not others or not root.others_finite:
        return None  # another replica went non-finite too, or is not recorded
    made = _made_alone(out, others)
    if made is None:
        return None
    replica = node.replica
    why = (
        f"held {made} in replica {replica}'s copy only (each replica computes on its own "
        f"share of the batch): only replica {replica}'s copy went non-finite; "
        f"{root.others_text} stayed finite"
    )
    for rule in RULES:
        if rule.check is not _one_replica:
            also = rule.check(node)
            if also is not None:
                why += f"; there it {also.why}"
                break
    evidence = [
        *(evidence_line(f"{node.op_type} output on replica {r}", s) for r, s in node.counterparts),
        *(evidence_line(f"root cause on replica {r}", s) for r, s in root.counterparts),
        evidence_line(f"{node.op_type} output on replica {replica}", out),
    ]
    return Origin(why, tuple(evidence))


def _made_alone(out: Summary, others: list[Summary]) -> str | None:
    """What ``out`` holds that none of ``others`` does, in a few words, or None."""
    if out.zero and all(s.zero == 0 for s in others):
        return count_text(out.zero, "exact zero")
    if out.neg and all(s.neg == 0 for s in others):
        return count_text(out.neg, "negative value")
    largest = max((s.max_abs for s in others if s.max_abs is not None), default=None)
    if out.max_abs is not None and largest is not None and largest > 0:
        if out.max_abs >= REPLICA_MAGNITUDE_GAP * largest:
            return f"values up to {out.max_abs:.3g} (the others' at most {largest:.3g})"
    return None


def _rising_learning_rate(reader: AnalysedRun, cause: RootCause) -> RunOrigin | None:
    """The learning rate rose step after step up to the root cause: its trailing
    stretch of rising values reaches the last value before the root cause, over at
    least `LR_RISE_MIN_VALUES` values and by `LR_RISE_MIN_FACTOR` x. A warm-up that
    ended before (the rate flat since) is not the cause, however high it ended."""
    before = cause.trace.index if cause.trace is not None else None
    rate = learning_rate(reader, before)
    if rate is None:
        return None
    values = rate.values
    start = rise_start([v.value for v in values])
    if start is None:
        return None
    first, last = values[start], values[-1]
    factor = last.value / first.value
    span = last.step - first.step
    pace = f", about x{factor ** (1 / span):.3g} per {rate.unit}" if span > 0 else ""
    return RunOrigin(
        rate.op.id,
        0,
        last.trace,
        f"{'computes' if rate.source == 'schedule' else 'reads'} the learning rate, which "
        f"rose from {first.value:.3g} at {rate.unit} {first.step} to {last.value:.3g} at "
        f"{rate.unit} {last.step} "
        f"({rate.source_text}){pace}, up to the divergence",
        (_rate_evidence(rate, start),),
    )


def rise_start(values: Sequence[float]) -> int | None:
    """Where the trailing stretch of strictly rising ``values`` begins, when it counts as
    a rise up to the last value: `LR_RISE_MIN_VALUES` values or more, from a positive
    value, by `LR_RISE_MIN_FACTOR` x or more; else None (a rate flat at its end, however
    it got there, did not rise up to it)."""
    if not values:
        return None
    start = len(values) - 1
    while start > 0 and values[start - 1] < values[start]:
        start -= 1
    while start < len(values) - 1 and not values[start] > 0:
        start += 1  # a warm-up from 0: the rise is counted from its first positive rate
    if len(values) - start < LR_RISE_MIN_VALUES or not values[start] > 0:
        return None
    return start if values[-1] / values[start] >= LR_RISE_MIN_FACTOR else None


def _rate_evidence(rate: LearningRate, start: int) -> str:
    """ "Mul 'sgd/mul' (the learning rate, ...): 0.01 at step 0, ..., 81.9 at step 13"."""
    shown = rate.values[start:]
    if len(shown) > 6:
        points = [*shown[:3], None, *shown[-2:]]
    else:
        points = list(shown)
    text = ", ".join(
        "..." if p is None else f"{p.value:.6g} at {rate.unit} {p.step}" for p in points
    )
    return f"{rate.op.op_type} '{rate.op.name}' (the learning rate, {rate.source_text}): {text}"


# The kinds of origin, in the order they are tried at each op upstream: a replica that
# went wrong alone first (its why names the other kind that also fits there).
RULES: tuple[OriginRule, ...] = (
    OriginRule("one_replica", "one replica only", _one_replica),
    OriginRule("saturation", "saturated", _saturation),
    OriginRule("cast_rounding", "rounded by a cast", _cast_rounding),
    OriginRule("exp_underflow", "exp underflow", _exp_underflow),
    OriginRule("dead_relu", "dead ReLUs", _dead_relu),
    OriginRule("integer_division", "integer division", _integer_division),
)
# The kinds of origin in the run's state, tried before the walk for their patterns.
RUN_RULES: tuple[RunOriginRule, ...] = (
    RunOriginRule(
        "rising_learning_rate",
        "rising learning rate",
        frozenset({"divergence"}),
        "fix what sets the learning rate (the optimizer's schedule, a callback, the "
        "loop's assign): it rose step after step up to the divergence (a decay that "
        "multiplies by a factor above 1, a warm-up with no end); make it decay or hold "
        "(keras.optimizers.schedules.ExponentialDecay with decay_rate < 1), and clip "
        "gradients (clipnorm=1.0) while you check it",
        _rising_learning_rate,
    ),
)
KINDS = tuple(rule.kind for rule in RULES) + tuple(rule.kind for rule in RUN_RULES)
