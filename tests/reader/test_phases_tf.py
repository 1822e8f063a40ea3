"""Phases for what is not a step, on real TensorFlow dumps (tests/programs/phases.py):
a checkpoint restore, `set_weights` and a variable's initial value (`restore`,
`init`, with the index of the first non-finite value), a NaN made in a Keras metric
only, and a from_generator call whose first line holds a comment."""

from __future__ import annotations

import json
import os

import pytest

import reader
from reader.analysis.diagnosis.diagnosis import diagnose_cause
from tests.present import present
from tests.reader.conftest import TF_PROGRAMS
from tfdbg_tui.commands.report import main as report_main

PROGRAM = os.path.join(TF_PROGRAMS, "phases.py")


def _bug_line(case: str) -> int:
    with open(PROGRAM, encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith(f"# BUG {case}"))


def _report(logdir: str, capsys) -> dict:
    assert report_main([logdir, "--json", "--no-proof"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "case, op_type, kind, phase, position",
    [
        ("restored", "RestoreV2", "variable_restored", "restore", [2, 0]),
        ("set_weights", "ReadVariableOp", "variable_assigned", "restore", [1, 1]),
        ("initial", "ReadVariableOp", "variable_initial", "init", [3]),
    ],
)
def test_values_that_came_in_outside_a_step_get_their_phase_and_index(
    phase_dumps, capsys, case, op_type, kind, phase, position
):
    report = _report(os.path.join(phase_dumps, case), capsys)
    first, source = report["first_alert"], report["diagnosis"]["source"]
    assert first["op_type"] == op_type
    assert first["phase"] == phase  # not "forward"
    assert source["kind"] == kind and source["phase"] == phase
    assert source["frame"]["line"] == _bug_line(case)
    assert source["position"] == position
    assert (
        f"its first non-finite value is at index {position}" in (report["diagnosis"]["explanation"])
    )
    assert report_main([os.path.join(phase_dumps, case), "--no-proof"]) == 0
    assert f"in the model: {phase}" in capsys.readouterr().out


# Keras 3's checkpoint key of the first Dense layer's kernel.
KERNEL_KEY = "model/_functional/_operations/1/_kernel/.ATTRIBUTES/VARIABLE_VALUE"


@pytest.mark.parametrize(
    "case, variable, rows, words",
    [
        (
            "restored",
            "sequential_1/dense/kernel",
            [2],
            "row 2 of `sequential_1/dense/kernel` holds NaN in 1 of its 2 values",
        ),
        (
            "set_weights",
            "sequential_2/dense/kernel",
            [1],
            "row 1 of `sequential_2/dense/kernel` holds NaN in 1 of its 2 values",
        ),
        ("initial", "Variable", [3], "element 3 of `Variable` is NaN"),
    ],
)
def test_a_variable_that_came_in_outside_a_step_is_named_with_its_rows(
    phase_dumps, capsys, case, variable, rows, words
):
    """The variable's name (its VarHandleOp's, format 2.8) and the rows of its value
    that hold the NaN (FULL_TENSOR)."""
    report = _report(os.path.join(phase_dumps, case), capsys)
    source = report["diagnosis"]["source"]
    assert (source["variable"], source["rows"]) == (variable, rows)
    assert words in report["diagnosis"]["explanation"]
    assert source["checkpoint_key"] == (KERNEL_KEY if case == "restored" else None)


def test_a_restore_names_its_checkpoint_key_and_says_what_to_check(phase_dumps, capsys):
    """RestoreV2's output 0 is key 0 of its tensor_names; the AssignVariableOp that
    wrote it names the variable. Why the checkpoint holds a NaN the dump cannot know:
    the fix says what to check, with the key."""
    report = _report(os.path.join(phase_dumps, "restored"), capsys)
    diagnosis = report["diagnosis"]
    assert (
        f"the variable `sequential_1/dense/kernel` was restored from checkpoint key `{KERNEL_KEY}`"
    ) in diagnosis["explanation"]
    assert f"get_tensor({KERNEL_KEY!r})" in diagnosis["suggestion"]
    assert "check how it was written" in diagnosis["suggestion"]
    assert "was saved after" not in diagnosis["suggestion"]
    with reader.open_run(os.path.join(phase_dumps, "restored")) as dump:
        restore = dump.execution(present(dump.root_cause()).alert.index)
        assert restore.op_type == "RestoreV2" and restore.names is not None
        assert restore.names[0] == KERNEL_KEY and len(restore.names) == len(restore.output_ids)


def test_a_restore_op_is_in_the_restore_phase(phase_dumps):
    with reader.open_run(os.path.join(phase_dumps, "restored")) as dump:
        assert dump.place(present(dump.root_cause()).alert).phase == "restore"


def test_a_nan_in_a_metric_only_says_training_is_unharmed(phase_dumps):
    with reader.open_run(os.path.join(phase_dumps, "metric")) as dump:
        cause = present(dump.root_cause())
        assert present(cause.frame).line == _bug_line("metric")
        assert dump.place(cause.alert).phase == "metric"
        diagnosis = diagnose_cause(dump, cause)
    assert diagnosis.pattern == "division_by_zero"
    assert (
        "The loss, the gradients and the weights stay finite; only the metric ZeroRate "
        "(`self.hits / self.count`) is NaN or infinite: training is unharmed"
    ) in diagnosis.explanation


def test_a_nan_in_the_loss_is_not_called_a_metric_only(phase_dumps):
    """The training cases keep their diagnosis: no metric sentence."""
    with reader.open_run(os.path.join(phase_dumps, "initial")) as dump:
        diagnosis = diagnose_cause(dump, present(dump.root_cause()))
    assert "only a metric" not in diagnosis.explanation


def test_a_comment_on_the_first_line_of_a_call_is_not_its_expression(phase_dumps, capsys):
    report = _report(os.path.join(phase_dumps, "generator"), capsys)
    source = report["first_alert"]["source"]
    assert source["text"].rstrip().endswith("# stream the export")
    assert source["expression"] == (
        "tf.data.Dataset.from_generator( _rows, output_signature=tf.TensorSpec((4,), tf.float32) )"
    )
    assert "#" not in source["text"][source["column"] : source["end_column"]]


def test_a_prefetched_generators_nan_is_named_at_the_step_that_consumed_it(phase_dumps, capsys):
    """The generator yields its NaN in element 3 (batch 1 of batches of 2); prefetching
    runs it while step 0 runs, and step 1 takes the batch."""
    logdir = os.path.join(phase_dumps, "generator")
    report = _report(logdir, capsys)
    first = report["first_alert"]
    assert first["op_type"] == "PyFunc" and first["phase"] == "data"
    assert first["step_number"] == 1
    consumed = first["consumed"]
    assert consumed["batch"] == 1 and consumed["step"] == 1 and consumed["made_at_step"] == 0
    assert report["diagnosis"]["source"]["function"] == "_rows"
    assert report_main([logdir, "--no-proof"]) == 0
    human = capsys.readouterr().out
    assert "' at step 1\n" in human
    assert "consumed at step 1 (batch 1 of its pipeline), made ahead by the pipeline while " in (
        " ".join(human.split())
    )


def test_a_step_that_made_its_own_nan_has_no_consumption(phase_dumps, capsys):
    report = _report(os.path.join(phase_dumps, "metric"), capsys)
    assert report["first_alert"]["consumed"] is None
