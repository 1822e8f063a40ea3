"""The proof's table of ops: each op type's call as the program made it and the same
call with the usual fix applied, as source text of the repro script.

The proof's home for fixed computations, keyed by op type (only an op type of this
table is ever written into a script; nothing else of the dump is). In the templates,
``{0}``, ``{1}`` stand for the op's inputs (``x0``, ``x1`` in the script); the script
defines, from the first input's dtype, ``EPS`` (its machine epsilon), ``LOG_MAX`` (the
largest integer whose exp is finite) and ``LOWEST`` (its most negative finite value).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpFix:
    """An op's call and its fixed form, as templates over its inputs.

    Attributes:
        call: The op as the program made it ("tf.math.log({0})").
        fixed: The call with the fix applied ("tf.math.log(tf.maximum({0}, EPS))").
        arity: How many inputs the templates take.
    """

    call: str
    fixed: str
    arity: int

    def line(self, fixed: bool) -> str:
        """The template with its inputs named ``x0``, ``x1``..."""
        template = self.fixed if fixed else self.call
        return template.format(*(f"x{i}" for i in range(self.arity)))


_DIVIDE = OpFix("{0} / {1}", "tf.math.divide_no_nan({0}, {1})", 2)

OP_FIXES: dict[str, OpFix] = {
    "Log": OpFix("tf.math.log({0})", "tf.math.log(tf.maximum({0}, EPS))", 1),
    # log1p's edge is -1, not 0.
    "Log1p": OpFix("tf.math.log1p({0})", "tf.math.log1p(tf.maximum({0}, EPS - 1.0))", 1),
    "Sqrt": OpFix("tf.sqrt({0})", "tf.sqrt(tf.maximum({0}, 0.0))", 1),
    "Rsqrt": OpFix("tf.math.rsqrt({0})", "tf.math.rsqrt(tf.maximum({0}, EPS))", 1),
    "RealDiv": _DIVIDE,
    "Div": _DIVIDE,
    "Reciprocal": OpFix("tf.math.reciprocal({0})", "tf.math.reciprocal_no_nan({0})", 1),
    "Pow": OpFix("tf.pow({0}, {1})", "tf.pow(tf.maximum({0}, EPS), {1})", 2),
    "Acos": OpFix("tf.math.acos({0})", "tf.math.acos(tf.clip_by_value({0}, -1.0, 1.0))", 1),
    "Asin": OpFix("tf.math.asin({0})", "tf.math.asin(tf.clip_by_value({0}, -1.0, 1.0))", 1),
    "Atanh": OpFix(
        "tf.math.atanh({0})", "tf.math.atanh(tf.clip_by_value({0}, EPS - 1.0, 1.0 - EPS))", 1
    ),
    # The gradient of sqrt at 0 (tf.norm of a zero vector): eps under the root, not
    # added to the vector, is the forward op's fix; its gradient then stays finite.
    "SqrtGrad": OpFix(
        "tf.raw_ops.SqrtGrad(y={0}, dy={1})",
        "tf.raw_ops.SqrtGrad(y=tf.sqrt(tf.square({0}) + EPS), dy={1})",
        2,
    ),
    "Exp": OpFix("tf.exp({0})", "tf.exp(tf.minimum({0}, LOG_MAX))", 1),
    # A row of -inf logits (all masked) has no softmax; the lowest finite logit has one.
    "Softmax": OpFix("tf.nn.softmax({0})", "tf.nn.softmax(tf.maximum({0}, LOWEST))", 1),
}

# The dtypes a script may name (as data, read from the .npz): those the table's ops take.
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INPUT_DTYPES = (*FLOAT_DTYPES, "int32", "int64")
