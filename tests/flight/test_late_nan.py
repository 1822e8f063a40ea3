"""A NaN born late in a long run, under the default circular buffer."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

import reader
from reader.run import liveness
from tests.flight.conftest import LOG_LINE, NAN_STEP, PROGRAM, ROOT, STEPS, TIMEOUT_S, report_json
from tests.present import present
from tests.program_runs import program_env


def test_the_root_cause_is_the_log_at_the_users_line(late_nan_logdir):
    report = report_json(late_nan_logdir)
    first = report["first_alert"]
    assert first["op_type"] == "Log" and first["counts"]["neg_inf"] > 0
    assert first["source"]["file"] == str(PROGRAM) and first["source"]["line"] == LOG_LINE
    assert first["step_number"] == NAN_STEP
    steps = report["steps"]
    assert steps["function"] == "train_step"
    assert steps["first_non_finite_step"] == NAN_STEP
    assert steps["alerts_per_step"][0] == [NAN_STEP, steps["alerts_per_step"][0][1]]
    assert steps["alerts_per_step"][-1][0] == STEPS - 1


def test_the_gap_between_the_pinned_window_and_the_tail_is_reported(late_nan_logdir):
    report = report_json(late_nan_logdir)
    (gap,) = report["gaps"]
    first, last = gap["steps"]
    assert NAN_STEP < first <= last < STEPS - 1
    assert gap["graph_traces"][0] < gap["graph_traces"][1]
    assert gap["text"] == f"graph traces of steps {first}-{last} not kept"
    with reader.open_run(late_nan_logdir) as dump:
        (pinned, tail) = dump.kept_traces()
        assert tail[1] == dump.num_traces and tail[1] - tail[0] >= 1000
        assert pinned[1] - pinned[0] >= 1000


def _what_was_read(dump) -> str:
    """What a killed run held on disk and what the reader found in it: the evidence a
    failure of the SIGKILL test must carry (it depends on the moment of the kill)."""
    files = sorted(
        f"{path.name}:{path.stat().st_size}" for path in pathlib.Path(dump.path).iterdir()
    )
    eager, graph = dump.execution_alert_rows()[0], dump.trace_alert_rows()[0]
    return (
        f"files {files}; executions {dump.num_executions}, traces {dump.num_traces}, "
        f"kept {dump.kept_traces()}; alert rows: eager {eager.size}, graph {graph.size}; "
        f"alerts {dump.alerts(limit_per_type=3)}"
    )


def test_sigkill_while_a_window_is_pinned_leaves_a_dump_that_opens(tmp_path):
    process = subprocess.Popen(
        [sys.executable, str(PROGRAM), str(tmp_path), "--forever"],
        cwd=ROOT,
        env=program_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip() in ("READY", "DONE"):
                break
        assert line.strip() == "READY"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT_S)
    with reader.open_run(tmp_path) as dump:
        assert not dump.finished and dump.writer_state() == liveness.KILLED
        cause = dump.root_cause()
        assert cause is not None, _what_was_read(dump)
        assert cause.alert.op_type == "Log" and present(cause.frame).line == LOG_LINE
        assert dump.steps().first_alert_step == NAN_STEP
        assert len(dump.steps().gaps) == 1
