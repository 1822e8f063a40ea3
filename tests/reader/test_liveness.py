"""Finished, running, killed or unknown: the state of a run's writing process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import reader
from reader.run import liveness
from tests.synthetic import start_writer

HOST = socket.gethostname()


def test_this_process_is_running():
    assert liveness.process_gone(HOST, os.getpid(), time.time() - 1) is False


def test_a_process_on_another_host_cannot_be_told():
    assert liveness.process_gone("elsewhere", os.getpid(), time.time()) is None
    assert liveness.process_gone(None, os.getpid(), time.time()) is None
    assert liveness.process_gone(HOST, None, time.time()) is None


def test_a_reused_pid_is_another_process():
    """This process started long after a run of 2023: the pid is not that run's."""
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc: process start times are unknown")
    assert liveness.process_gone(HOST, os.getpid(), 1_700_000_000.0) is True


def test_killed_and_reaped_or_not_yet_reaped_processes_are_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    started = time.time()
    assert liveness.process_gone(HOST, child.pid, started) is False
    child.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 30
    # Not waited for yet: a zombie until its parent (this test) reaps it.
    while not liveness.process_gone(HOST, child.pid, started):
        assert time.monotonic() < deadline, "a killed child still counts as running"
        time.sleep(0.01)
    child.wait()
    assert liveness.process_gone(HOST, child.pid, started) is True


@pytest.mark.parametrize("ending,state", [("kill", liveness.KILLED), ("close", liveness.FINISHED)])
def test_a_run_whose_process_ended_is_killed_or_finished(tmp_path, ending, state):
    child, path = start_writer(tmp_path)
    with reader.DumpReader(path) as dump:
        assert dump.writer_state() == liveness.RUNNING
        if ending == "kill":
            child.send_signal(signal.SIGKILL)
        else:
            assert child.stdin is not None
            child.stdin.write("close\n")
            child.stdin.flush()
        child.wait(timeout=60)
        # Read before the process ended: `writer_state` reads its end, if written.
        assert dump.writer_state() == state


def test_state_of():
    assert liveness.state_of(True, True) == liveness.FINISHED
    assert liveness.state_of(False, True) == liveness.KILLED
    assert liveness.state_of(False, False) == liveness.RUNNING
    assert liveness.state_of(False, None) == liveness.UNKNOWN


@pytest.mark.parametrize(
    "state,says",
    [
        (liveness.FINISHED, "No NaN or infinity in this run."),
        (
            liveness.KILLED,
            "No NaN or infinity recorded, but the run never finished: its "
            "process ended without finishing the run (the last recorded: step 2)",
        ),
        (liveness.UNKNOWN, "the run never finished: it has no end record"),
        (
            liveness.RUNNING,
            "No NaN or infinity so far: the run is live (the last recorded: step 2).",
        ),
        (
            liveness.STOPPED,
            "No NaN or infinity before the recording stopped on a write error "
            "(the last recorded: step 2)",
        ),
    ],
)
def test_a_run_without_alerts_is_clean_only_when_it_finished(tmp_path, state, says):
    """A job killed while it hung (a deadlocked collective) has no NaN because it
    never got further: it must not read as a clean run."""
    from reader.analysis.diagnosis.verdict import no_alert_statement
    from tests.synthetic import add_step, health_row, make_run

    run = make_run(tmp_path)
    for _ in range(3):
        add_step(run, [health_row(np.ones(4))] * 3)
    run.writer.flush()
    with reader.open_run(tmp_path) as dump:
        assert dump.alerts().total == 0
        assert says in no_alert_statement(dump, state)


def test_the_report_of_a_killed_run_without_alerts_says_it_never_finished(tmp_path):
    child, path = start_writer(tmp_path)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    out = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "No NaN or infinity in this run." not in out.stdout
    assert (
        "the run never finished: its process ended without finishing the run "
        "(nothing ran)" in " ".join(out.stdout.split())
    )
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tfdbg_tui.cli", "report", "--json", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )
    assert (report["state"], report["reached"]) == (liveness.KILLED, None)
