"""The diagnosis and the exact expression on real TensorFlow dumps: one per pattern.

Each case of tests/programs/patterns.py makes one kind of NaN/inf; its
culprit line ends with ``# BUG <case>``. The diagnosis must name the pattern, the op
and the expression, through the reader and through ``report --json``.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

import reader
from reader.analysis.diagnosis import op_patterns
from reader.analysis.diagnosis.diagnosis import PATTERNS, diagnose_alert, diagnose_cause
from reader.analysis.diagnosis.registry import rule_of
from tests.present import present
from tests.reader.conftest import HARM_PATTERN_CASES, PATTERN_CASES, PATTERN_RUNS, TF_PROGRAMS
from tfdbg_tui.commands.report import main as report_main

PROGRAM = os.path.join(TF_PROGRAMS, "patterns.py")
# The expression is the column span of the frame's instruction, which Python gives from
# 3.11 on (`co_positions`, PEP 657); on 3.10 a frame has its line only, the dump records
# no span, and the diagnosis names the op instead (`Log 'Log'`), with no carets.
SPANS = sys.version_info >= (3, 11)


def _bug_line(case: str) -> int:
    with open(PROGRAM, encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith(f"# BUG {case}"))


def _diagnosed_alert(dump: reader.DumpReader, case: str, op_type: str):
    if case not in PATTERN_RUNS:
        return present(dump.root_cause()).alert
    return next(a for a in dump.alerts().alerts if a.op_type == op_type)


def test_every_pattern_has_a_case():
    assert {pattern for _, pattern, _ in PATTERN_CASES.values()} | set(HARM_PATTERN_CASES) == set(
        PATTERNS
    )


def test_every_case_marks_its_bug_line():
    """Each `@case` of tests/programs/patterns.py has its ``# BUG <case>`` line."""
    assert all(_bug_line(case) > 0 for case in PATTERN_CASES)


@pytest.mark.parametrize("case", sorted(PATTERN_CASES))
def test_diagnosis_names_pattern_op_and_expression(pattern_dumps, case):
    op_type, pattern, expression = PATTERN_CASES[case]
    with reader.open_run(os.path.join(pattern_dumps, PATTERN_RUNS.get(case, case))) as dump:
        alert = _diagnosed_alert(dump, case, op_type)
        diagnosis = diagnose_alert(dump, alert)
        local = dump.root_cause(alert) if case in PATTERN_RUNS else dump.root_cause()
        assert diagnosis.alert is not None
        assert (diagnosis.pattern, diagnosis.alert.op_type) == (pattern, op_type)
        if SPANS:
            assert f"`{expression}`" in diagnosis.explanation
        else:
            assert local is not None
            assert local.frame is not None
            assert local.frame.column is None and expression not in diagnosis.explanation
        # The op's own patterns give the fix table's entry for the op where it ran, else
        # their rule's fix, but an input whose source is known
        # (reader.analysis.diagnosis.input_source); the training patterns word their own.
        own = pattern in {rule.pattern for rule in op_patterns.RULES}
        expected = (
            diagnosis.source.suggestion
            if diagnosis.source
            else diagnosis.fix.text
            if diagnosis.fix is not None
            else rule_of(pattern).fix
            if own
            else diagnosis.suggestion
        )
        assert diagnosis.suggestion == expected
        assert diagnosis.suggestion
        assert diagnosis.evidence and all(isinstance(e, str) for e in diagnosis.evidence)
        # The output is named as the tensor it is ("scope/Log_1:0"), as inputs are.
        tensor = f"{alert.op_name or alert.op_type}:{alert.slot}"
        assert any(line.startswith(f"output `{tensor}` ") for line in diagnosis.evidence)
        if case not in PATTERN_RUNS:
            assert local is not None
            assert diagnose_cause(dump, local) == diagnosis
            assert local.frame is not None
            assert (local.frame.path, local.frame.line) == (PROGRAM, _bug_line(case))


@pytest.mark.parametrize("case", sorted(set(PATTERN_CASES) - set(PATTERN_RUNS)))
def test_report_json_carries_diagnosis_and_expression(pattern_dumps, case, capsys):
    op_type, pattern, expression = PATTERN_CASES[case]
    assert report_main([os.path.join(pattern_dumps, case), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["first_alert"]["op_type"] == op_type
    source = report["first_alert"]["source"]
    if SPANS:
        assert source["expression"] == expression
        assert source["text"][source["column"] : source["end_column"]] == expression
    else:
        assert source["expression"] is None and source["column"] is None
        assert expression in source["text"]
    assert report["diagnosis"]["pattern"] == pattern
    assert set(report["diagnosis"]) == {
        "pattern",
        "explanation",
        "suggestion",
        "evidence",
        "source",
        "fix",
        "chain",
        "chain_note",
        "proof",
    }
    assert (report["diagnosis"]["source"] is None) == (pattern != "nonfinite_input")
    # A summary mode: the proof says in one line which mode keeps the values.
    assert report["diagnosis"]["proof"]["missing"].startswith(
        "no values: this run recorded FULL_HEALTH summaries only"
    )


def test_counts_are_cited(pattern_dumps):
    with reader.open_run(os.path.join(pattern_dumps, "log_zero")) as dump:
        diagnosis = diagnose_alert(dump, present(dump.root_cause()).alert)
    assert "1 exact zero among 4 values" in diagnosis.explanation
    assert "log(0) = -inf" in diagnosis.explanation
    assert any("1 zero" in line for line in diagnosis.evidence)


def test_human_report_puts_carets_under_the_expression(pattern_dumps, capsys):
    assert report_main([os.path.join(pattern_dumps, "log_zero")]) == 0
    lines = capsys.readouterr().out.splitlines()
    code = next(n for n, line in enumerate(lines) if "# BUG log_zero" in line)
    carets = lines[code + 1]
    if not SPANS:
        assert "^" not in carets and "Diagnosis: log_of_nonpositive" in "\n".join(lines)
        return
    start = carets.index("^")
    assert lines[code][start : len(carets)] == "tf.math.log(probs)"
    assert "Diagnosis: log_of_nonpositive" in "\n".join(lines)


def test_a_gradient_op_names_its_forward_op_by_its_user_line(pattern_dumps, capsys):
    """SqrtGrad's forward op is the Sqrt it reads: named with the user's line and
    expression (`tf.sqrt(weights)`), in the place and in ``report --json``."""
    with open(PROGRAM, encoding="utf-8") as f:
        sqrt_line = next(n for n, line in enumerate(f, 1) if "tf.sqrt(weights)" in line)
    logdir = os.path.join(pattern_dumps, "sqrt_grad")
    with reader.open_run(logdir) as dump:
        place = dump.place(present(dump.root_cause()).alert)
    assert place.phase == "gradient"
    assert place.forward is not None and place.forward.op_type == "Sqrt"
    assert place.forward_frame is not None and place.forward_frame.line == sqrt_line
    assert report_main([logdir, "--json", "--no-proof"]) == 0
    forward = json.loads(capsys.readouterr().out)["first_alert"]["forward_op"]
    assert forward["op_type"] == "Sqrt" and forward["line"] == sqrt_line
    assert forward["file"] == PROGRAM and forward["function"] == "grads"
    if SPANS:
        assert forward["expression"] == "tf.sqrt(weights)"
