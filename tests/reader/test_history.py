"""The culprit's history (`reader.analysis.diagnosis.history`): on a real TensorFlow run whose
log(0) starts after 250 good steps, and its wording on hand-made histories."""

from __future__ import annotations

import os

import numpy as np
import pytest

import reader
from reader import format as fmt
from reader.analysis.diagnosis.history import TensorHistory, step_axis, tensor_history
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run

# tests/programs/patterns.py, case late_log: 300 steps, log(0) from step 250 on.
LATE_STEPS, LATE_FIRST_BAD_STEP = 300, 250


def test_history_of_a_culprit_that_broke_at_step_250(pattern_dumps):
    with reader.open_run(os.path.join(pattern_dumps, "late_log")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.op is not None
        assert (cause.op.op_type, cause.alert.step) == ("Log", LATE_FIRST_BAD_STEP)
        history = tensor_history(dump, cause.op.id, cause.alert.slot)
        assert history is not None
        assert history.count == LATE_STEPS
        assert history.steps.tolist() == list(range(LATE_STEPS))
        assert history.nonfinite.tolist() == [step >= 250 for step in range(LATE_STEPS)]
        assert history.traces[history.first_nonfinite] == cause.alert.index
        assert history.describe() == (
            f"finite for steps 0-249, first non-finite at step 250 (#{cause.alert.index}), "
            f"and in all 49 traces after"
        )
        # Its input (`probs * 1.0`) held a zero but stayed finite all along.
        (ref,) = cause.op.inputs
        assert ref.op_id is not None
        assert (
            present(tensor_history(dump, ref.op_id, ref.slot)).describe()
            == "finite in all 300 traces (steps 0-299)"
        )
        axis = step_axis([history, present(tensor_history(dump, ref.op_id, ref.slot))])
        assert axis.tolist() == list(range(LATE_STEPS))
        share = history.nonfinite_share(axis, 30)
        assert share.tolist() == [0.0] * 25 + [1.0] * 5


def _history(steps, nonfinite) -> TensorHistory:
    steps = np.asarray(steps, dtype=np.int64)
    return TensorHistory(
        7, 0, np.arange(steps.size, dtype=np.int64) * 10, steps, np.asarray(nonfinite, dtype=bool)
    )


@pytest.mark.parametrize(
    "steps, nonfinite, text",
    [
        ([], [], "no trace on disk"),
        ([4], [False], "finite in all 1 trace (step 4)"),
        (
            [0, 1, 2],
            [True, True, True],
            "non-finite from its first trace, at step 0 (#0), and in all 2 traces after",
        ),
        (
            [0, 1, 2],
            [False, True, False],
            "finite for step 0, first non-finite at step 1 (#10), and in 0 of the 1 trace after",
        ),
        (
            [0, 0, 1, 1, 2],
            [False, False, False, True, False],
            "finite for steps 0-1, first non-finite at step 1 (#30), and in 0 of the 1 trace after",
        ),
        (
            [3, 5, 9, 12],
            [False, False, True, True],
            "finite for steps 3-5, first non-finite at step 9 (#20), and in the 1 trace after",
        ),
        (
            [0, 1, 2, 3, 4, 5],
            [False, True, False, True, True, False],
            "finite for step 0, first non-finite at step 1 (#10), and in 2 of the 4 traces after",
        ),
        (
            [-1, 0, 1],
            [False, False, True],
            "finite for the setup before step 0 and step 0, first non-finite at step 1 (#20)",
        ),
        (
            [-1, 2],
            [True, False],
            "non-finite from its first trace, at the setup before step 0 (#0), and in 0 of the "
            "1 trace after",
        ),
    ],
    ids=[
        "empty",
        "finite",
        "from-the-start",
        "once",
        "within-a-step",
        "sudden",
        "intermittent",
        "setup",
        "setup-bad",
    ],
)
def test_describe(steps, nonfinite, text):
    assert _history(steps, nonfinite).describe() == text


def test_the_shared_axis_holds_the_steps_any_tensor_ran_in():
    output = _history([2, 4, 6, 8], [False, True, True, False])
    early_input = _history([0, 2, 4], [False, False, True])
    axis = step_axis([output, early_input, _history([], [])])
    assert axis.tolist() == [0, 2, 4, 6, 8]
    assert output.nonfinite_share(axis, 5).tolist()[1:] == [0.0, 1.0, 1.0, 0.0]
    assert np.isnan(output.nonfinite_share(axis, 5)[0])  # it did not run in step 0
    # Fewer cells than steps: each cell holds the share of its traces.
    share = early_input.nonfinite_share(axis, 2)  # cells: steps 0-4, steps 6-8
    assert share[0] == pytest.approx(1 / 3) and np.isnan(share[1])
    assert output.nonfinite_share(axis, 1).tolist() == [0.5]
    # Cells never outnumber the steps; steps off the axis are left out.
    assert output.nonfinite_share(np.array([4, 8]), 12).tolist() == [1.0, 0.0]


def test_history_through_the_index_of_a_synthetic_run(logdir):
    run = make_run(logdir)
    for rows in ([FINITE] * 3, [FINITE, NEG_INF, NAN], [FINITE] * 3, [FINITE, NEG_INF, FINITE]):
        add_step(run, rows)
    run.writer.close()
    with reader.open_run(run.path) as dump:
        log = tensor_history(dump, run.ops["Log"], 0)
        assert log is not None
        assert log.traces.tolist() == [1, 4, 7, 10]
        assert log.steps.tolist() == [0, 1, 2, 3]
        assert log.describe() == (
            "finite for step 0, first non-finite at step 1 (#4), and in 1 of the 2 traces after"
        )
        assert (
            present(tensor_history(dump, run.ops["x"], 0)).describe()
            == "finite in all 4 traces (steps 0-3)"
        )


def test_no_history_without_health(logdir):
    run = make_run(logdir, mode=fmt.NO_TENSOR)
    w = run.writer
    w.add_traces(np.arange(3, dtype=np.int32), summaries=None)
    w.close()
    with reader.open_run(run.path) as dump:
        assert tensor_history(dump, run.ops["Log"], 0) is None


def _eager_op(run) -> None:
    """An eager op between steps (an optimizer's update): it shifts execution indices
    away from step numbers."""
    base = 5000 + 2 * run.writer.num_executions
    run.writer.add_execution(
        op_type="AssignVariableOp",
        graph_id=None,
        input_ids=[base],
        output_ids=[],
        device_ids=[],
        output_dtypes=[],
        stack_id=run.user_stack,
    )


def test_history_steps_are_the_alerts_steps_not_execution_indices(logdir):
    """Eager ops run between the calls: the history names steps as the Alerts pane does."""
    run = make_run(logdir)
    _eager_op(run)  # before the first step
    for rows in ([FINITE] * 3, [FINITE] * 3, [FINITE, NEG_INF, NAN]):
        add_step(run, rows)
        _eager_op(run)
        _eager_op(run)
    run.writer.close()
    with reader.open_run(run.path) as dump:
        log = tensor_history(dump, run.ops["Log"], 0)
        assert log is not None
        assert dump.trace_steps_at(log.traces).tolist() == [1, 4, 7]  # execution indices
        assert log.steps.tolist() == [0, 1, 2]
        assert dump.steps().first_alert_step == 2
        assert log.describe() == "finite for steps 0-1, first non-finite at step 2 (#7)"


def test_a_run_without_steps_names_executions(logdir):
    run = make_run(logdir)
    _eager_op(run)
    add_step(run, [FINITE] * 3, call=False)
    _eager_op(run)
    add_step(run, [FINITE, NEG_INF, NAN], call=False)
    run.writer.close()
    with reader.open_run(run.path) as dump:
        log = tensor_history(dump, run.ops["Log"], 0)
        assert log is not None
        assert log.unit == "execution"
        assert (
            log.describe() == f"finite for execution {log.steps[0]}, first non-finite at execution "
            f"{log.steps[1]} (#4)"
        )
