"""The chain upstream of a root cause and the fixes that fit, on real TensorFlow
programs (tests/programs/chains.py): each origin rule finds its kind at the line
marked ``# ORIGIN <case>``, the chain runs from there to the root cause (``# BUG``),
``report`` and ``report --json`` give it, and the fix is the table's entry for the
op where it ran."""

from __future__ import annotations

import json
import os
import re

import pytest

import reader
from reader.analysis.diagnosis import chain_rules
from reader.analysis.diagnosis.diagnosis import diagnose_root_cause
from tests.conftest import CHAINS_PROGRAM
from tests.present import present
from tfdbg_tui.commands.report import main as report_main

# case -> (origin kind, origin op, root op, pattern).
CHAIN_CASES = {
    "sigmoid_saturation": ("saturation", "Sigmoid", "Log", "log_of_nonpositive"),
    "cast_rounding": ("cast_rounding", "Cast", "Log", "log_of_nonpositive"),
    "exp_underflow": ("exp_underflow", "Exp", "Log", "log_of_nonpositive"),
    "dead_relu": ("dead_relu", "Relu", "RealDiv", "division_by_zero"),
    "integer_division": ("integer_division", "Cast", "RealDiv", "division_by_zero"),
    "one_replica": ("one_replica", "Sum", "Log", "log_of_nonpositive"),
    "rising_learning_rate": ("rising_learning_rate", "Mul", "Square", "divergence"),
    "rising_learning_rate_loop": ("rising_learning_rate", "ReadVariableOp", "Square", "divergence"),
}
# case -> (fix family, context, words the fix holds, words it must not).
FIX_CASES = {
    "sigmoid_saturation": ("probability_loss", "any", ("from_logits",), ()),
    "log1p_layer": ("log1p", "layer", ("log1p", "-1"), ("xlogy", "from_logits", "loss")),
    "norm_gradient": (
        "norm",
        "any",
        ("tf.sqrt(tf.reduce_sum(x * x) + 1e-12)",),
        ("tf.norm(x + eps)",),
    ),
    "integer_division": ("division", "data", ("integer", "float64", "divide_no_nan"), ()),
    "exp_underflow": ("log", "any", ("tf.math.log(tf.maximum(x, 1e-7))",), ("log1p",)),
}


def marked_line(marker: str) -> int | None:
    with open(CHAINS_PROGRAM, encoding="utf-8") as f:
        return next((n for n, line in enumerate(f, 1) if line.rstrip().endswith(marker)), None)


def test_every_origin_rule_has_a_case():
    assert {kind for kind, *_ in CHAIN_CASES.values()} == set(chain_rules.KINDS)


@pytest.mark.parametrize("case", sorted(CHAIN_CASES))
def test_the_chain_runs_from_its_origin_to_the_root_cause(chain_dumps, case):
    kind, origin_op, root_op, pattern = CHAIN_CASES[case]
    with reader.open_run(os.path.join(chain_dumps, case)) as dump:
        diagnosis = present(diagnose_root_cause(dump))
        cause = present(dump.root_cause())
    assert diagnosis.pattern == pattern
    chain = diagnosis.chain
    assert len(chain) >= 2
    origin, root = chain[0], chain[-1]
    assert (origin.kind, origin.op_type) == (kind, origin_op)
    assert [link.kind for link in chain[1:]] == [None] * (len(chain) - 1)
    assert (origin.file, origin.line) == (
        CHAINS_PROGRAM,
        marked_line(f"# ORIGIN {case}") or marked_line(f"# BUG {case}"),
    )
    assert (root.op_type, root.trace) == (root_op, present(cause.trace).index)
    assert root.line == marked_line(f"# BUG {case}")
    # Upstream first: every link's trace comes before the next one's.
    traces = [present(link.trace) for link in chain]
    assert traces == sorted(traces)
    assert f"They began upstream: {origin.subject} {origin.why}" in diagnosis.explanation
    assert diagnosis.chain_note is None
    assert diagnosis.evidence[-1].startswith(f"{origin_op} ") or "Cast" in diagnosis.evidence[-1]


def test_saturation_says_exactly_one(chain_dumps):
    with reader.open_run(os.path.join(chain_dumps, "sigmoid_saturation")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    origin, between, _ = diagnosis.chain
    assert origin.expression == "tf.sigmoid(logits)" and "exactly 1.0" in origin.why
    assert between.expression == "1.0 - p" and "2 exact zeros" in between.why


def test_a_value_made_on_one_replica_says_which(chain_dumps, capsys):
    """MirroredStrategy over two CPUs: only replica 1's share of the batch sums to 0.
    The chain's origin is replica 1's copy of the sum, and says that replica 0's copy
    stayed finite; the root cause's link says so too."""
    with reader.open_run(os.path.join(chain_dumps, "one_replica")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    origin, root = diagnosis.chain
    assert (origin.kind, origin.name) == ("one_replica", "replica_1/Sum")
    assert "1 exact zero in replica 1's copy only" in origin.why, origin.why
    assert "only replica 1's copy went non-finite; replica 0's stayed finite" in origin.why
    assert root.name == "replica_1/Log" and "on replica 1 only" in root.why, root.why
    assert "Sum output on replica 0" in " ".join(diagnosis.evidence)
    assert report_main([os.path.join(chain_dumps, "one_replica"), "--json"]) == 0
    chain = json.loads(capsys.readouterr().out)["diagnosis"]["chain"]
    assert chain[0]["kind"] == "one_replica" and "replica 0's stayed finite" in chain[0]["why"]


def test_one_replica_in_a_keras_fit_names_the_other_kind_too(chain_dumps):
    """A Keras fit under MirroredStrategy whose replica 1 alone gets a batch share
    scaled up: the origin is replica 1's Softmax, one replica's, and saturated there;
    the fix is still the saturated probabilities' (from_logits)."""
    with reader.open_run(os.path.join(chain_dumps, "one_replica_fit")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    origin, root = diagnosis.chain
    assert (origin.kind, origin.op_type) == ("one_replica", "Softmax")
    assert present(origin.name).startswith("replica_1/")
    assert "replica 0's stayed finite; there it saturated to exactly 0" in origin.why
    assert origin.line == marked_line("# ORIGIN one_replica_fit")
    assert root.line == marked_line("# BUG one_replica_fit") and "replica 1 only" in root.why
    assert "from_logits" in diagnosis.suggestion


def test_a_learning_rate_that_rose_to_the_divergence_is_its_origin(chain_dumps, capsys):
    """A schedule that doubles the learning rate every step: the divergence's chain
    starts at the schedule's op with the rates read per step, and the fix is the
    schedule's, not the inputs' normalisation."""
    with reader.open_run(os.path.join(chain_dumps, "rising_learning_rate")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
        root_step = present(dump.steps().of_execution(present(dump.root_cause()).alert.step))
    origin = diagnosis.chain[0]
    rose = re.search(
        r"the learning rate, which rose from ([0-9.e+-]+) at step 0 to ([0-9.e+-]+) at "
        r"step (\d+) \(the optimizer's schedule\)",
        origin.why,
    )
    assert rose, origin.why
    assert float(rose[1]) == pytest.approx(0.01)
    assert int(rose[3]) == root_step - 1  # the last rate before the overflow
    assert float(rose[2]) == pytest.approx(0.01 * 2 ** int(rose[3]), rel=1e-3)
    assert "rose" in diagnosis.explanation and "schedule" in diagnosis.suggestion
    assert "normalise" not in diagnosis.suggestion and diagnosis.fix is None
    assert diagnosis.evidence[-1].startswith("Mul 'sgd")
    assert report_main([os.path.join(chain_dumps, "rising_learning_rate"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["diagnosis"]
    assert [link["kind"] for link in got["chain"]] == ["rising_learning_rate", None]
    assert got["chain"][0]["line"] == marked_line("# ORIGIN rising_learning_rate")
    assert "normalise" not in got["suggestion"]


def test_a_warm_up_that_ended_before_the_divergence_is_not_its_cause(chain_dumps):
    """A warm-up to a rate too high, flat for steps before the training diverges: the
    divergence is diagnosed with its usual fix, and nothing says the rate rose."""
    with reader.open_run(os.path.join(chain_dumps, "warmup_diverging")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    assert diagnosis.pattern == "divergence"
    assert "rising_learning_rate" not in [link.kind for link in diagnosis.chain]
    assert "rose" not in diagnosis.explanation
    assert "lower the learning rate" in diagnosis.suggestion


def test_a_mode_without_counts_says_which_would_show_the_chain(chain_dumps):
    with reader.open_run(os.path.join(chain_dumps, "sigmoid_saturation-CURT_HEALTH")) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    assert diagnosis.chain == ()
    note = present(diagnosis.chain_note)
    assert "CURT_HEALTH" in note and "FULL_HEALTH" in note
    assert "began upstream" not in diagnosis.explanation


@pytest.mark.parametrize("case", sorted(FIX_CASES))
def test_the_fix_fits_the_op_where_it_ran(chain_dumps, case):
    family, context, words, never = FIX_CASES[case]
    with reader.open_run(os.path.join(chain_dumps, case)) as dump:
        diagnosis = present(diagnose_root_cause(dump))
    fix = present(diagnosis.fix)
    assert (fix.family, fix.context) == (family, context)
    assert diagnosis.suggestion == fix.text
    assert all(word in diagnosis.suggestion for word in words), diagnosis.suggestion
    assert not any(word in diagnosis.suggestion for word in never), diagnosis.suggestion


def test_report_json_gives_the_chain_and_the_fix(chain_dumps, capsys):
    assert report_main([os.path.join(chain_dumps, "sigmoid_saturation"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["diagnosis"]
    chain = got["chain"]
    assert [link["op_type"] for link in chain] == ["Sigmoid", "Sub", "Log"]
    for link in chain:
        assert {"op_type", "name", "file", "line", "expression", "why"} <= set(link)
        assert link["file"] == CHAINS_PROGRAM and link["why"]
    assert chain[0]["kind"] == "saturation" and chain[0]["expression"] == "tf.sigmoid(logits)"
    assert got["chain_note"] is None
    assert got["fix"]["family"] == "probability_loss"
    assert got["fix"]["transform"] == "clip_min" and got["fix"]["params"] == {"min": 1e-7}
    assert report_main([os.path.join(chain_dumps, "sigmoid_saturation-CURT_HEALTH"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["diagnosis"]
    assert got["chain"] == [] and "FULL_HEALTH" in got["chain_note"]


def test_report_prints_the_chain(chain_dumps, capsys):
    assert report_main([os.path.join(chain_dumps, "dead_relu")]) == 0
    out = capsys.readouterr().out
    lines = out[out.index("Chain:") :].splitlines()
    assert "`tf.nn.relu(tf.matmul(x, w) - 10.0)`" in lines[1] and "[Relu]" in lines[1]
    assert "dead" in lines[1]
    assert "`h / tf.reduce_sum(h)`" in lines[2] and "NaN" in lines[2]
