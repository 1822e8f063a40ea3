"""The origins of bad finite values: one rule per kind of op that makes them.

The chain (`reader.analysis.diagnosis.chain`) walks upstream from the root cause
through its inputs' summaries; at each op it tries `RULES` in order, and the first
that finds its kind there is the origin: where the exact zeros, the values at the edge
of a domain or the huge magnitudes that the root cause then turned non-finite were made.
Each rule reads only the op's type, dtypes and the summaries of its output and inputs,
and says what it read (its evidence). Adding a kind is adding one `OriginRule` entry
and a case of tests/programs/chains.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reader.analysis.diagnosis.wording import count_text, evidence_line
from reader.model import Summary

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


@dataclass(frozen=True, slots=True)
class ChainNode:
    """One op on the way upstream, as the rules see it.

    Attributes:
        op_type: The op's type.
        name: The graph op's name (None for an eager op).
        output: The summary of the output the walk came through.
        output_dtype: Its dtype.
        inputs: Each input's (tensor name, summary, dtype), where the dump has them.
    """

    op_type: str
    name: str | None
    output: Summary | None
    output_dtype: str | None
    inputs: tuple[tuple[str, Summary | None, str | None], ...]


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


# The kinds of origin, in the order they are tried at each op upstream.
RULES: tuple[OriginRule, ...] = (
    OriginRule("saturation", "saturated", _saturation),
    OriginRule("cast_rounding", "rounded by a cast", _cast_rounding),
    OriginRule("exp_underflow", "exp underflow", _exp_underflow),
    OriginRule("dead_relu", "dead ReLUs", _dead_relu),
    OriginRule("integer_division", "integer division", _integer_division),
)
KINDS = tuple(rule.kind for rule in RULES)
