"""Fixes that fit: one table of the fix for an op family in a context.

The diagnosis names what went wrong; this table says what to change, for the op that
did it and where it ran. An entry is keyed by the op's family (``log``, ``log1p``,
``division``...: `OP_FAMILIES` maps op types to them) and the context the op ran in:

- ``loss``: a loss function (Keras' losses, or a user function named for a loss);
- ``layer``: a Keras layer's ``call``;
- ``data``: a tf.data function (``Dataset.map`` and the like);
- ``optimizer``: an optimizer's update or a setting of it;
- ``any``: everywhere else, and the fallback of every family.

No family words another's fix: each entry names its own op (a test holds it). Where an
entry's fix is one computation, it carries it as data for the proof of the fix (which
runs the op again, as it was and fixed): ``transform``, its ``params`` and the
``input`` it changes, and ``fixed``, the fixed line in the user's code with ``x`` for
the op's input. This module is the one home of that computation: `fixed_call` writes
it around an op's call (`OpCall`: how the proof calls an op type, the table of
`instrument.repro.op_fixes`), the line the proof reruns and `tfdbg-tui repro` writes.
The reader never runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTEXTS = ("loss", "layer", "data", "optimizer", "any")

# The transforms the proof knows (`Fix.transform`); each is applied to the op's input
# `Fix.input` (its position among the op's inputs):
# - ``clip_min``: x -> maximum(x, min) before the op;
# - ``clip_max``: x -> minimum(x, max) before the op;
# - ``clip_range``: x -> clip_by_value(x, min, max) before the op;
# - ``divide_no_nan``: the division replaced by tf.math.divide_no_nan (0 where y == 0);
# - ``eps_under_root``: sqrt(s) -> sqrt(s + eps), the squared sum of a norm.
TRANSFORMS = ("clip_min", "clip_max", "clip_range", "divide_no_nan", "eps_under_root")
# Each transform as code around the input it changes (``{x}``), with its params;
# ``divide_no_nan`` replaces the whole call (`OpCall.quotient`).
_TRANSFORM_CODE = {
    "clip_min": "tf.maximum({x}, {min})",
    "clip_max": "tf.minimum({x}, {max})",
    "clip_range": "tf.clip_by_value({x}, {min}, {max})",
    "eps_under_root": "{x} + {eps}",
    "divide_no_nan": "tf.math.divide_no_nan({x}, {y})",
}
# ``eps_under_root`` on an input that is a root's value (`OpCall.root_value`: sqrt's
# gradient takes sqrt(s), not s): the root taken again over s + eps.
_ROOT_VALUE_CODE = "tf.sqrt(tf.square({x}) + {eps})"

# Op type -> its family in the table.
OP_FAMILIES = {
    "Log": "log",
    "Xlogy": "log",
    "Log1p": "log1p",
    "Xlog1py": "log1p",
    "Sqrt": "sqrt",
    "Rsqrt": "rsqrt",
    "Pow": "pow",
    "RealDiv": "division",
    "Div": "division",
    "FloorDiv": "division",
    "TruncateDiv": "division",
    "FloorMod": "division",
    "TruncateMod": "division",
    "Mod": "division",
    "Xdivy": "division",
    "Reciprocal": "division",
    "Inv": "division",
    "DivNoNan": "division",
    "Acos": "acos",
    "Asin": "asin",
    "Atanh": "atanh",
    "Exp": "exp",
    "Expm1": "exp",
    "Softmax": "softmax",
    "LogSoftmax": "softmax",
}
# The gradient kernels of a family's forward op.
GRADIENT_FAMILIES = {
    "SqrtGrad": "sqrt_gradient",
    "RsqrtGrad": "rsqrt",
    "ReciprocalGrad": "division",
}
# Functions whose square root is a norm: a sqrt made under them is the ``norm`` family.
NORM_FUNCTIONS = ("norm", "l2_normalize", "global_norm", "euclidean_norm")
# A function whose name holds one of these computes a loss (Keras' losses too).
_LOSS_WORDS = ("loss", "crossentropy", "cross_entropy")
# Ops whose probabilities a log turns into a loss (the ``probability_loss`` family).
PROBABILITY_OPS = frozenset({"Softmax", "Sigmoid"})


@dataclass(frozen=True, slots=True)
class Fix:
    """One entry of the table.

    Attributes:
        family: The op family (`OP_FAMILIES`' values, ``norm``, ``probability_loss``).
        context: One of `CONTEXTS`.
        text: The fix, in the user's terms (the diagnosis' ``suggestion``).
        transform: One of `TRANSFORMS`, where the fix is one computation, else None.
        params: The transform's numbers (``min``, ``max``, ``eps``).
        input: The position of the op's input the transform changes.
        fixed: The fixed line, ``x`` (and ``y``) the op's inputs.
    """

    family: str
    context: str
    text: str
    transform: str | None = None
    params: tuple[tuple[str, float], ...] = ()
    input: int = 0
    fixed: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The entry as ``report --json`` gives it (``diagnosis.fix``)."""
        return {
            "family": self.family,
            "context": self.context,
            "transform": self.transform,
            "params": dict(self.params),
            "input": self.input,
            "fixed": self.fixed,
        }


_LOG_EPS = (("min", 1e-7),)
_LOG1P_EDGE = (("min", -1 + 1e-6),)

TABLE: tuple[Fix, ...] = (
    Fix(
        "log",
        "any",
        "clip the input away from zero before the log: tf.math.log(tf.maximum(x, 1e-7))",
        fixed="tf.math.log(tf.maximum(x, 1e-7))",
        transform="clip_min",
        params=_LOG_EPS,
    ),
    Fix(
        "log",
        "loss",
        "compute the loss from logits (from_logits=True, "
        "tf.nn.softmax_cross_entropy_with_logits); for labels * log(p) use "
        "tf.math.xlogy(labels, p), which is 0 where the label is; else "
        "tf.math.log(tf.maximum(p, 1e-7))",
        fixed="tf.math.log(tf.maximum(x, 1e-7))",
        transform="clip_min",
        params=_LOG_EPS,
    ),
    Fix(
        "log",
        "layer",
        "clip the layer's input to the log away from zero (tf.math.log(tf.maximum(x, "
        "1e-7))), or make it positive by construction (tf.nn.softplus(x) + 1e-7)",
        fixed="tf.math.log(tf.maximum(x, 1e-7))",
        transform="clip_min",
        params=_LOG_EPS,
    ),
    Fix(
        "log",
        "data",
        "the log in the tf.data function met zeros or negatives in the data: filter "
        "those rows (dataset.filter) or clip them (tf.math.log(tf.maximum(x, 1e-7)))",
        fixed="tf.math.log(tf.maximum(x, 1e-7))",
        transform="clip_min",
        params=_LOG_EPS,
    ),
    Fix(
        "log1p",
        "any",
        "log1p is finite above -1 only: keep its input above -1 "
        "(tf.math.log1p(tf.maximum(x, -1 + 1e-6))), or find why it reached -1",
        fixed="tf.math.log1p(tf.maximum(x, -1 + 1e-6))",
        transform="clip_min",
        params=_LOG1P_EDGE,
    ),
    Fix(
        "log1p",
        "layer",
        "the layer's log1p got values at or below -1: keep them above -1 "
        "(tf.math.log1p(tf.maximum(x, -1 + 1e-6))) or give the layer an input that "
        "cannot reach -1 (log1p(relu(x)), log1p(softplus(x)))",
        fixed="tf.math.log1p(tf.maximum(x, -1 + 1e-6))",
        transform="clip_min",
        params=_LOG1P_EDGE,
    ),
    Fix(
        "probability_loss",
        "any",
        "compute the loss from the logits (from_logits=True, "
        "tf.nn.softmax_cross_entropy_with_logits), not the log of probabilities that "
        "can reach exactly 0",
        fixed="tf.math.log(tf.maximum(x, 1e-7))",
        transform="clip_min",
        params=_LOG_EPS,
    ),
    Fix(
        "sqrt",
        "any",
        "clip the square root's input at zero (tf.sqrt(tf.maximum(x, 0.0))); a negative "
        "variance from E[x^2] - E[x]^2 is rounding: use tf.math.reduce_variance",
        transform="clip_min",
        params=(("min", 0.0),),
        fixed="tf.sqrt(tf.maximum(x, 0.0))",
    ),
    Fix(
        "sqrt_gradient",
        "any",
        "the gradient of sqrt is infinite where its input is 0: put an epsilon under the "
        "root (tf.sqrt(x + 1e-12)), or use the double tf.where so that the zeros never "
        "reach it",
        transform="eps_under_root",
        params=(("eps", 1e-12),),
        fixed="tf.sqrt(x + 1e-12)",
    ),
    Fix(
        "rsqrt",
        "any",
        "keep rsqrt's input above zero: tf.math.rsqrt(tf.maximum(x, 1e-12)) (or "
        "x + eps, as batch normalisation does with its variance)",
        transform="clip_min",
        params=(("min", 1e-12),),
        fixed="tf.math.rsqrt(tf.maximum(x, 1e-12))",
    ),
    Fix(
        "norm",
        "any",
        "put the epsilon under the root, where it does not shift the vector: "
        "tf.sqrt(tf.reduce_sum(x * x) + 1e-12) instead of tf.norm(x) (or "
        "tf.math.l2_normalize, which does so), so that a zero vector has a finite gradient",
        transform="eps_under_root",
        params=(("eps", 1e-12),),
        fixed="tf.sqrt(tf.reduce_sum(x * x) + 1e-12)",
    ),
    Fix(
        "pow",
        "any",
        "make pow's base non-negative first (tf.pow(tf.maximum(x, 0.0), y), or "
        "tf.sign(x) * tf.pow(tf.abs(x), y) for an odd root), or use an integer exponent",
        transform="clip_min",
        params=(("min", 0.0),),
        fixed="tf.pow(tf.maximum(x, 0.0), y)",
    ),
    Fix(
        "division",
        "any",
        "use tf.math.divide_no_nan(x, y) (0 where y == 0), add an epsilon to the "
        "denominator, or mask the empty entries before dividing",
        transform="divide_no_nan",
        input=1,
        fixed="tf.math.divide_no_nan(x, y)",
    ),
    Fix(
        "division",
        "data",
        "the division in the tf.data function met a zero denominator in the data: "
        "filter those rows (dataset.filter(lambda r: r['y'] != 0)) or use "
        "tf.math.divide_no_nan(x, y); `/` on integer columns also gives float64, "
        "cast them first (tf.cast(x, tf.float32))",
        transform="divide_no_nan",
        input=1,
        fixed="tf.math.divide_no_nan(x, y)",
    ),
    Fix(
        "division",
        "optimizer",
        "the optimizer divided by zero: give it a positive epsilon (the default, 1e-7) "
        "rather than epsilon=0.0",
    ),
    Fix(
        "acos",
        "any",
        "clip acos's input into [-1, 1] first: tf.math.acos(tf.clip_by_value(x, -1.0, 1.0)) "
        "(rounding pushes a cosine computed as 1 just past it)",
        transform="clip_range",
        params=(("min", -1.0), ("max", 1.0)),
        fixed="tf.math.acos(tf.clip_by_value(x, -1.0, 1.0))",
    ),
    Fix(
        "asin",
        "any",
        "clip asin's input into [-1, 1] first: tf.math.asin(tf.clip_by_value(x, -1.0, 1.0))",
        transform="clip_range",
        params=(("min", -1.0), ("max", 1.0)),
        fixed="tf.math.asin(tf.clip_by_value(x, -1.0, 1.0))",
    ),
    Fix(
        "atanh",
        "any",
        "keep atanh's input inside the open interval (-1, 1): "
        "tf.math.atanh(tf.clip_by_value(x, -1 + 1e-6, 1 - 1e-6))",
        transform="clip_range",
        params=(("min", -1 + 1e-6), ("max", 1 - 1e-6)),
        fixed="tf.math.atanh(tf.clip_by_value(x, -1 + 1e-6, 1 - 1e-6))",
    ),
    Fix(
        "exp",
        "any",
        "exp overflows float32 above 88.7: shift its input first (exp(x - max(x)), "
        "tf.math.reduce_logsumexp, tf.nn.softmax) or cap it (tf.exp(tf.minimum(x, 80.0))); "
        "under mixed precision keep this op in float32",
        transform="clip_max",
        params=(("max", 80.0),),
        fixed="tf.exp(tf.minimum(x, 80.0))",
    ),
    Fix(
        "exp",
        "loss",
        "the loss exponentiates: compute it in log space (tf.math.reduce_logsumexp, a "
        "loss with from_logits=True) instead of exp then log",
        transform="clip_max",
        params=(("max", 80.0),),
        fixed="tf.exp(tf.minimum(x, 80.0))",
    ),
    Fix(
        "softmax",
        "any",
        "softmax is NaN when a row's logits are all -inf or hold +inf: mask with a large "
        "finite value (tf.where(mask, logits, -1e9)) instead of -inf, and keep the "
        "logits finite",
        transform="clip_min",
        params=(("min", -1e9),),
        fixed="tf.nn.softmax(tf.maximum(x, -1e9))",
    ),
)
_BY_KEY = {(fix.family, fix.context): fix for fix in TABLE}


@dataclass(frozen=True, slots=True)
class OpCall:
    """How the proof calls an op type, as a template over its inputs (``{0}``, ``{1}``).

    Attributes:
        call: The op as the program made it ("tf.math.log({0})").
        arity: How many inputs it takes.
        quotient: For a division, its numerator and denominator as templates
            (``divide_no_nan`` rewrites the call with them); None otherwise.
        root_value: The input that is a square root's value (``SqrtGrad``'s ``y``),
            where ``eps_under_root`` takes the root again; None otherwise.
    """

    call: str
    arity: int
    quotient: tuple[str, str] | None = None
    root_value: int | None = None

    def line(self, names: tuple[str, ...] | None = None) -> str:
        """The call with its inputs named (``x0``, ``x1``... by default)."""
        return self.call.format(*(names or self.names))

    @property
    def names(self) -> tuple[str, ...]:
        """The inputs' names in the proof's script: ``x0``, ``x1``..."""
        return tuple(f"x{i}" for i in range(self.arity))


def proof_fix(op_type: str, op_name: str | None = None) -> Fix | None:
    """The entry whose computation the proof applies to an op: its family's ``any``
    entry (a family's entries that carry a computation carry the same one, whatever
    the context: a test holds it); None when its family has no computation."""
    fix = fix_for(family_of(op_type, op_name, None, ()), "any")
    return fix if fix is not None and fix.transform is not None else None


def fixed_call(fix: Fix, call: OpCall) -> str | None:
    """The op's call with ``fix``'s computation applied, its inputs named ``x0``,
    ``x1``...: "tf.math.log(tf.maximum(x0, 1e-07))"; None when the computation does
    not fit the call (no transform, an input it lacks, a division without operands)."""
    names = call.names
    params = {key: _literal(value) for key, value in fix.params}
    if fix.transform == "divide_no_nan":
        if call.quotient is None:
            return None
        x, y = (part.format(*names) for part in call.quotient)
        return _TRANSFORM_CODE["divide_no_nan"].format(x=x, y=y)
    code = _TRANSFORM_CODE.get(fix.transform or "")
    position = fix.input
    if fix.transform == "eps_under_root" and call.root_value is not None:
        code, position = _ROOT_VALUE_CODE, call.root_value
    if code is None or not 0 <= position < call.arity:
        return None
    changed = list(names)
    changed[position] = code.format(x=names[position], **params)
    return call.line(tuple(changed))


def _literal(value: float) -> str:
    """A param as a Python float literal: "1e-07", "-0.999999", "80.0"."""
    text = f"{value:.7g}"
    return text if any(c in text for c in ".en") else f"{text}.0"


def fix_for(family: str | None, context: str) -> Fix | None:
    """The entry of ``family`` in ``context``, else the family's ``any`` entry; None
    for a family the table does not have."""
    if family is None:
        return None
    return _BY_KEY.get((family, context)) or _BY_KEY.get((family, "any"))


def families() -> tuple[str, ...]:
    """Every family of the table, in its order."""
    return tuple(dict.fromkeys(fix.family for fix in TABLE))


def family_of(
    op_type: str, op_name: str | None, expression: str | None, input_ops: tuple[str | None, ...]
) -> str | None:
    """The family of the op a diagnosis names: its type's (`OP_FAMILIES`), its forward
    op's for a gradient kernel; ``norm`` for a square root a norm made (its name scope or
    its expression says so); ``probability_loss`` for a log of a softmax or sigmoid."""
    family = OP_FAMILIES.get(op_type) or GRADIENT_FAMILIES.get(op_type)
    if family in ("sqrt", "sqrt_gradient", "rsqrt") and _under_norm(op_name, expression):
        return "norm"
    if family == "log" and op_type == "Log" and PROBABILITY_OPS.intersection(input_ops):
        return "probability_loss"
    return family


def refined_family(family: str, origin_op: str) -> str:
    """The family once the chain's origin is known: a log whose zeros a sigmoid or a
    softmax made is a loss computed from probabilities."""
    return "probability_loss" if family == "log" and origin_op in PROBABILITY_OPS else family


def _under_norm(op_name: str | None, expression: str | None) -> bool:
    scopes = (op_name or "").split("/")[:-1]
    named = any(s.rsplit("_", 1)[0] in NORM_FUNCTIONS or s in NORM_FUNCTIONS for s in scopes)
    return named or any(f"{name}(" in (expression or "") for name in NORM_FUNCTIONS)


def context_of(phase: str | None, layer: str | None, functions: tuple[str, ...]) -> str:
    """The context an op ran in (`CONTEXTS`), from its phase and layer
    (`reader.analysis.hunt.model_place.Place`) and the functions on its stack that made
    it (the user's and the library's, innermost first)."""
    if phase == "data":
        return "data"
    if phase == "optimizer":
        return "optimizer"
    if any(word in f.lower() for f in functions for word in _LOSS_WORDS):
        return "loss"
    if layer or "call" in functions:
        return "layer"
    return "any"
