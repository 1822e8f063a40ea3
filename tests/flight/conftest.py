"""Real TensorFlow runs of `late_nan.py`, shared by the flight-recorder tests.

The program is a custom training loop whose cross-entropy takes log(0) for the first
time at step 250 of 450 (the flight recorder's measurement in docs/performance.md);
each run takes a few seconds.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")

from tests.program_runs import ROOT, line_of, program_env

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "programs" / "late_nan.py"
NAN_STEP = 250
STEPS = 450
LOG_LINE = line_of(PROGRAM, "# LOG_LINE")
TIMEOUT_S = 240


def run_late_nan(logdir: pathlib.Path, *args: str) -> list[str]:
    """Run late_nan.py to its end; return its stdout lines (it must exit 0)."""
    result = subprocess.run(
        [sys.executable, str(PROGRAM), str(logdir), *args],
        cwd=ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.splitlines()


def report_json(logdir: pathlib.Path) -> dict:
    """`tfdbg-tui report --json` of the newest run, through the real CLI."""
    result = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", str(logdir), "--json"],
        cwd=ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="session")
def late_nan_logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The 450-step loop, FULL_HEALTH, the default circular buffer (1000)."""
    logdir = tmp_path_factory.mktemp("late_nan")
    lines = run_late_nan(logdir)
    assert lines[-1] == "DONE"
    return logdir
