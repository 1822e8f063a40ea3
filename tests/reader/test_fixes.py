"""The table of fixes that fit (`reader.analysis.diagnosis.fixes`): one entry per op
family and context, each naming its own op and no other's; the machine-readable form
the proof of a fix reads. The fixes on real programs: tests/reader/test_chain_tf.py."""

from __future__ import annotations

import pytest

from reader.analysis.diagnosis import fixes
from reader.analysis.diagnosis.fixes import CONTEXTS, TABLE, TRANSFORMS, context_of, family_of
from tests.present import present

# What each family's text must name (its own op), and what it must not (another's).
OWN_WORDS = {
    "log": ("log(",),
    "log1p": ("log1p", "-1"),
    "probability_loss": ("logits",),
    "sqrt": ("sqrt",),
    "sqrt_gradient": ("sqrt", "gradient"),
    "rsqrt": ("rsqrt",),
    "norm": ("tf.sqrt(tf.reduce_sum(x * x) + ",),
    "pow": ("pow",),
    "division": ("divide_no_nan",),
    "acos": ("acos", "[-1, 1]"),
    "asin": ("asin", "[-1, 1]"),
    "atanh": ("atanh", "(-1, 1)"),
    "exp": ("exp",),
    "softmax": ("softmax",),
}
FOREIGN_WORDS = {
    "log": ("log1p", "acos"),
    "log1p": ("xlogy", "from_logits", "clip the input away from zero"),
    "norm": ("tf.norm(x + ",),
    "sqrt": ("log(",),
    "acos": ("atanh",),
    "asin": ("atanh",),
    "atanh": ("acos", "asin"),
}


def test_every_family_has_a_fallback_and_entries_are_unique():
    keys = [(fix.family, fix.context) for fix in TABLE]
    assert len(set(keys)) == len(keys)
    assert {fix.context for fix in TABLE} <= set(CONTEXTS)
    for family in fixes.families():
        assert (family, "any") in keys, family
    assert set(fixes.families()) == set(OWN_WORDS)
    texts = [fix.text for fix in TABLE]
    assert len(set(texts)) == len(texts), "two entries share a text"


@pytest.mark.parametrize("fix", TABLE, ids=lambda f: f"{f.family}-{f.context}")
def test_each_entry_names_its_own_op_and_no_other(fix):
    if fix.context != "optimizer":  # an optimizer setting, not the op
        assert any(word in fix.text for word in OWN_WORDS[fix.family]), fix.text
    assert not any(word in fix.text for word in FOREIGN_WORDS.get(fix.family, ())), fix.text
    assert fix.text.strip() == fix.text and not fix.text.endswith(".")


@pytest.mark.parametrize("fix", TABLE, ids=lambda f: f"{f.family}-{f.context}")
def test_a_fix_that_is_one_computation_carries_it_as_data(fix):
    assert (fix.transform is None) == (fix.fixed is None)
    if fix.transform is None:
        return
    assert fix.transform in TRANSFORMS
    assert "x" in fix.fixed
    params = dict(fix.params)
    needed = {
        "clip_min": {"min"},
        "clip_max": {"max"},
        "clip_range": {"min", "max"},
        "divide_no_nan": set(),
        "eps_under_root": {"eps"},
    }[fix.transform]
    assert set(params) == needed
    assert fix.as_dict()["params"] == params and fix.as_dict()["transform"] == fix.transform
    if fix.transform == "clip_range":
        assert params["min"] < params["max"]


@pytest.mark.parametrize(
    ("op_type", "name", "expression", "inputs", "family"),
    [
        ("Log", "Log", "tf.math.log(p)", (None,), "log"),
        ("Log", "Log", "tf.math.log(p)", ("Softmax",), "probability_loss"),
        ("Log1p", "layer/Log1p", "tf.math.log1p(x)", ("Sub",), "log1p"),
        ("SqrtGrad", "gradient_tape/norm/Sqrt/SqrtGrad", None, (None, None), "norm"),
        ("Sqrt", "Sqrt", "tf.norm(v)", ("Sum",), "norm"),
        ("Sqrt", "Sqrt", "tf.sqrt(v)", ("Sum",), "sqrt"),
        ("SqrtGrad", "gradient_tape/Sqrt/SqrtGrad", None, (None, None), "sqrt_gradient"),
        ("Rsqrt", "l2_normalize/Rsqrt", None, ("Maximum",), "norm"),
        ("RealDiv", "truediv", "a / b", (None, None), "division"),
        ("Acos", "Acos", None, (None,), "acos"),
        ("MatMul", "MatMul", None, (None, None), None),
    ],
)
def test_family_of_an_op(op_type, name, expression, inputs, family):
    assert family_of(op_type, name, expression, inputs) == family


@pytest.mark.parametrize(
    ("phase", "layer", "functions", "context"),
    [
        ("data", None, ("ratio",), "data"),
        ("optimizer", None, ("update_step",), "optimizer"),
        ("forward", None, ("loss",), "loss"),
        ("forward", None, ("binary_crossentropy",), "loss"),
        ("forward", "model/dense", ("call",), "layer"),
        ("forward", None, ("call",), "layer"),
        ("forward", None, ("step",), "any"),
        (None, None, (), "any"),
    ],
)
def test_context_of_an_op(phase, layer, functions, context):
    assert context_of(phase, layer, functions) == context


def test_a_family_falls_back_to_its_own_entry():
    assert present(fixes.fix_for("log1p", "loss")).family == "log1p"
    assert present(fixes.fix_for("log1p", "loss")).context == "any"
    assert present(fixes.fix_for("log", "loss")).context == "loss"
    assert fixes.fix_for(None, "loss") is None
    assert fixes.fix_for("no_such_family", "any") is None


def test_a_familys_computation_is_the_same_in_every_context():
    """The proof applies a family's ``any`` entry (`fixes.proof_fix`): that is the
    diagnosis's computation only if no context changes it."""
    computations: dict[str, set] = {}
    for fix in TABLE:
        if fix.transform is not None:
            computations.setdefault(fix.family, set()).add((fix.transform, fix.params, fix.input))
    assert all(len(found) == 1 for found in computations.values()), computations


@pytest.mark.parametrize(
    ("call", "fix", "line"),
    [
        (
            fixes.OpCall("tf.math.log({0})", 1),
            fixes.Fix("log", "any", "t", "clip_min", (("min", 1e-7),)),
            "tf.math.log(tf.maximum(x0, 1e-07))",
        ),
        (
            fixes.OpCall("tf.pow({0}, {1})", 2),
            fixes.Fix("pow", "any", "t", "clip_min", (("min", 0.0),)),
            "tf.pow(tf.maximum(x0, 0.0), x1)",
        ),
        (
            fixes.OpCall("f({0})", 1),
            fixes.Fix("atanh", "any", "t", "clip_range", (("min", -1 + 1e-6), ("max", 1 - 1e-6))),
            "f(tf.clip_by_value(x0, -0.999999, 0.999999))",
        ),
        (
            fixes.OpCall("tf.math.reciprocal({0})", 1, quotient=("tf.ones_like({0})", "{0}")),
            fixes.Fix("division", "any", "t", "divide_no_nan", input=1),
            "tf.math.divide_no_nan(tf.ones_like(x0), x0)",
        ),
        (
            fixes.OpCall("tf.sqrt({0})", 1),
            fixes.Fix("norm", "any", "t", "eps_under_root", (("eps", 1e-12),)),
            "tf.sqrt(x0 + 1e-12)",
        ),
        (
            fixes.OpCall("g(y={0}, dy={1})", 2, root_value=0),
            fixes.Fix("norm", "any", "t", "eps_under_root", (("eps", 1e-12),)),
            "g(y=tf.sqrt(tf.square(x0) + 1e-12), dy=x1)",
        ),
        # What does not fit the call: no line.
        (fixes.OpCall("x / y", 1), fixes.Fix("division", "any", "t", "divide_no_nan"), None),
        (fixes.OpCall("f({0})", 1), fixes.Fix("pow", "any", "t", "clip_min", input=1), None),
        (fixes.OpCall("f({0})", 1), fixes.Fix("softmax", "any", "t"), None),
    ],
)
def test_the_fixed_call_is_the_computation_written_around_the_call(call, fix, line):
    assert fixes.fixed_call(fix, call) == line


def test_every_op_the_proof_reruns_gets_its_familys_fixed_line():
    """`instrument.repro.op_fixes` says only how an op is called; its fixed line is the
    table's computation, with the entry's numbers, around the op's own call."""
    from instrument.repro.op_fixes import OP_CALLS

    for op_type, call in OP_CALLS.items():
        fix = present(fixes.proof_fix(op_type))
        assert fix.family == family_of(op_type, None, None, ())
        line = present(fixes.fixed_call(fix, call))
        for _, value in fix.params:
            assert fixes._literal(value) in line, (op_type, line)
        if fix.transform == "divide_no_nan":
            assert line.startswith("tf.math.divide_no_nan("), line
        else:
            assert line.startswith(call.call.split("{")[0]), (op_type, line)


def test_the_proof_takes_a_norms_computation_for_a_root_under_a_norm():
    norm = present(fixes.proof_fix("SqrtGrad", "gradient_tape/norm/Sqrt/SqrtGrad"))
    assert (norm.family, norm.transform) == ("norm", "eps_under_root")
    assert fixes.proof_fix("MatMul") is None
