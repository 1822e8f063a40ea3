"""The proof's table of ops: how the repro script calls each op type it can rerun.

Only an op type of this table is ever written into a script (nothing else of the dump
is). The fixed line is not here: it is the fix table's computation
(`reader.analysis.diagnosis.fixes`, the one home of each op family's fix) written
around the call by `fixes.fixed_call`. In the templates, ``{0}``, ``{1}`` stand for
the op's inputs (``x0``, ``x1`` in the script).
"""

from __future__ import annotations

from reader.analysis.diagnosis.fixes import OpCall

_DIVIDE = OpCall("{0} / {1}", 2, quotient=("{0}", "{1}"))

OP_CALLS: dict[str, OpCall] = {
    "Log": OpCall("tf.math.log({0})", 1),
    "Log1p": OpCall("tf.math.log1p({0})", 1),
    "Sqrt": OpCall("tf.sqrt({0})", 1),
    "Rsqrt": OpCall("tf.math.rsqrt({0})", 1),
    "RealDiv": _DIVIDE,
    "Div": _DIVIDE,
    "Reciprocal": OpCall("tf.math.reciprocal({0})", 1, quotient=("tf.ones_like({0})", "{0}")),
    "Pow": OpCall("tf.pow({0}, {1})", 2),
    "Acos": OpCall("tf.math.acos({0})", 1),
    "Asin": OpCall("tf.math.asin({0})", 1),
    "Atanh": OpCall("tf.math.atanh({0})", 1),
    # The gradient of sqrt: its y is sqrt's output, dy the gradient flowing in.
    "SqrtGrad": OpCall("tf.raw_ops.SqrtGrad(y={0}, dy={1})", 2, root_value=0),
    "Exp": OpCall("tf.exp({0})", 1),
    "Softmax": OpCall("tf.nn.softmax({0})", 1),
}

# The dtypes a script may name (as data, read from the .npz): those the table's ops take.
INPUT_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
