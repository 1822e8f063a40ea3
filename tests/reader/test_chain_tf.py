"""The chain upstream of a root cause and the fixes that fit, on real TensorFlow
programs (tests/programs/chains.py): each origin rule finds its kind at the line
marked ``# ORIGIN <case>``, the chain runs from there to the root cause (``# BUG``),
``report`` and ``report --json`` give it, and the fix is the table's entry for the
op where it ran."""

from __future__ import annotations

import json
import os

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
