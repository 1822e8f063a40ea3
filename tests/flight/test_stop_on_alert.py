"""`stop_on_alert=True` on real TensorFlow programs: eager, tf.function and Keras fit.

Each run takes log(0) first at step `NAN_STEP` of `SHORT_STEPS`; the program must
stop in that step, with the error naming the Log op and the user's line, and the
dump behind it must hold the alert.
"""

from __future__ import annotations

import json

import pytest

import reader
from tests.flight.conftest import LOG_LINE, PROGRAM, run_late_nan
from tests.present import present

NAN_STEP = 12
SHORT_STEPS = 30

FLAVOURS = {
    # flavour: (extra arguments, graph name of the Log op, name of its tensor)
    "tf.function": ((), "train_step", "Log:0"),
    # No circular buffer: the flight recorder needs no alert, stop_on_alert still does.
    "tf.function, keep all": (("--buffer", "-1"), "train_step", "Log:0"),
    "eager": (("--eager",), None, "Log:0"),
    "keras-fit": (("--keras",), "one_step_on_data", "compile_loss/hand_written_loss/Log:0"),
}


@pytest.mark.parametrize("flavour", list(FLAVOURS))
def test_the_program_stops_in_the_step_of_the_first_nan(tmp_path, flavour):
    extra, graph, tensor = FLAVOURS[flavour]
    lines = run_late_nan(
        tmp_path,
        "--stop-on-alert",
        "--steps",
        str(SHORT_STEPS),
        "--nan-step",
        str(NAN_STEP),
        *extra,
    )
    # Every step before the NaN ran; the NaN's step was cut short, no later one ran.
    assert [line for line in lines if line.startswith("step ")] == [
        f"step {s}" for s in range(NAN_STEP)
    ]
    assert lines[-1].startswith("STOPPED ")
    error = json.loads(lines[-1][len("STOPPED ") :])
    assert error["is_floating_point_error"]
    assert error["op_type"] == "Log" and error["tensor_name"] == tensor
    assert error["graph_name"] == graph
    assert (error["file"], error["line"]) == (str(PROGRAM), LOG_LINE)
    message = error["message"]
    assert f"Log '{tensor}'" in message and f"{PROGRAM}:{LOG_LINE}" in message
    assert "tf.math.log(probs)" in message and error["run_path"] in message
    if graph is None:
        # Eager code has no steps: the place is the execution's index.
        assert error["step"] is None and "at execution " in message
    else:
        assert error["step"] == NAN_STEP and f"in graph '{graph}' at step {NAN_STEP}" in message
    # The program died right after the error, without closing the run: the dump
    # already held the alert when it was raised.
    with reader.DumpReader(error["run_path"]) as dump:
        assert not dump.finished
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.op_type == "Log" and present(cause.frame).line == LOG_LINE
        steps = dump.steps()
        if graph is not None:
            assert steps.first_alert_step == NAN_STEP
            assert steps.kept_steps()[-1][1] == NAN_STEP
