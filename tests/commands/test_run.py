"""`tfdbg-tui run -- python PROGRAM.py ARGS` on real programs, without a terminal: the
program runs unchanged, the report of its run is printed, its status passes through."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from tests.commands.conftest import (
    PROGRAMS,
    ROOT,
    TIMEOUT_S,
    interrupt_when,
    run_env,
    tfdbg_command,
    tfdbg_run,
)
from tests.program_runs import line_of
from tfdbg_tui import exit_codes as codes

SCRIPT = PROGRAMS / "run_script.py"


@pytest.fixture(scope="module")
def gated(workdir):
    """The script with arguments and a relative data path, `--json --fail-on-alert`."""
    return tfdbg_run(
        "--json",
        "--fail-on-alert",
        "--circular-buffer",
        "-1",
        "--",
        "python",
        str(SCRIPT),
        "--data",
        "data/values.txt",
        cwd=workdir,
    )


def test_the_program_runs_unchanged_with_its_arguments_and_working_directory(gated, workdir):
    # --json: the program's stdout goes to stderr, stdout holds the report alone.
    seen = json.loads(
        next(line for line in gated.stderr.splitlines() if line.startswith('{"argv"'))
    )
    assert seen["argv"] == [str(SCRIPT), "--data", "data/values.txt"]
    assert seen["name"] == "__main__"
    assert seen["cwd"] == str(workdir)
    assert seen["path0"] == str(PROGRAMS)
    assert seen["logs"][0] == float("-inf")


def test_fail_on_alert_in_a_pipe_gives_the_report_json_and_a_failing_status(gated, workdir):
    assert gated.status == codes.EXIT_ALERT, gated.stderr[-3000:]
    report = gated.json()
    assert report["first_alert"]["op_type"] == "Log"
    assert report["first_alert"]["source"]["file"] == str(SCRIPT)
    assert report["finished"] is True
    # The logdir is new, under ./tfdbg-logdir/, and said at the start.
    assert list((workdir / "tfdbg-logdir").glob(f"run_script-*/{report['run']}"))
    assert gated.our_lines()[0].startswith("tfdbg-tui run: recording into tfdbg-logdir/run_script-")
    assert "harmful NaN or infinity (--fail-on-alert)" in gated.our_lines()[-1]


def test_a_module_runs_with_python_m_and_its_exit_status_passes_through(workdir):
    env = run_env()
    env["PYTHONPATH"] = f"{PROGRAMS}:{env['PYTHONPATH']}"
    done = tfdbg_run(
        "--logdir",
        "mine",
        "--",
        "python",
        "-m",
        "run_script",
        "--data",
        "data/values.txt",
        "--exit",
        "3",
        cwd=workdir,
        env=env,
    )
    assert done.status == 3, done.stderr[-3000:]
    first = json.loads(done.stdout.splitlines()[0])
    assert first["argv"] == [str(SCRIPT), "--data", "data/values.txt", "--exit", "3"]
    assert first["name"] == "__main__"
    assert any("exited with status 3" in line for line in done.our_lines())
    # The human report of what was recorded follows the program's output.
    assert "Root cause: Log" in done.stdout
    assert list((workdir / "mine").iterdir())


def test_a_crash_shows_the_programs_traceback_then_the_report(workdir):
    done = tfdbg_run(
        "--", "python", str(SCRIPT), "--data", "data/values.txt", "--crash", cwd=workdir
    )
    assert done.status == 1
    traceback = done.stderr[done.stderr.index("Traceback") :]
    # As without us: the program's frame first, none of the runner's or runpy's.
    assert traceback.splitlines()[1].startswith(f'  File "{SCRIPT}", line ')
    assert "runpy" not in traceback and "instrument" not in traceback.split("RuntimeError")[0]
    assert "RuntimeError: the program's own error" in traceback
    assert "Root cause: Log" in done.stdout


def test_ctrl_c_closes_the_dump_and_shows_what_was_recorded(workdir):
    process = subprocess.Popen(
        tfdbg_command("run", "--", "python", str(SCRIPT), "--data", "data/values.txt", "--wait"),
        cwd=workdir,
        env=run_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    # SIGINT to the program alone, as a terminal's Ctrl+C reaches it (`run` ignores it).
    child = _child_of(process.pid)
    read = interrupt_when(process, "waiting for Ctrl+C", pid=child)
    out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 128 + 2, err[-3000:]
    assert "KeyboardInterrupt" in err
    assert "stopped by SIGINT; the dump is closed" in err
    assert "(finished)" in read + out  # the run has its end record


def _child_of(pid: int) -> int:
    """The `python -m instrument` child of `tfdbg-tui run` (its one child)."""
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = pathlib.Path(f"/proc/{pid}/task/{pid}/children")
        found = children.read_text().split() if children.exists() else []
        if found:
            return int(found[0])
        time.sleep(0.05)
    raise AssertionError("tfdbg-tui run started no child")


def test_a_keras_fit_is_recorded_and_healthy(workdir):
    done = tfdbg_run(
        "--json",
        "--fail-on-alert",
        "--",
        sys.executable,
        str(PROGRAMS / "run_keras_fit.py"),
        cwd=workdir,
    )
    assert done.status == 0, done.stderr[-3000:]
    assert "FIT DONE" in done.stderr
    report = done.json()
    assert report["first_alert"] is None
    assert report["num_graph_traces"] > 0
    assert report["steps"]["function"]


def test_a_program_that_sets_threads_and_devices_first_runs(workdir):
    """Enabling makes nothing in TensorFlow's runtime (which would freeze its threads and
    devices): the trace queue is made when a graph first traces a tensor."""
    done = tfdbg_run(
        "--json", "--", sys.executable, str(PROGRAMS / "run_configures_runtime.py"), cwd=workdir
    )
    assert done.status == 0, done.stderr[-3000:]
    assert "CONFIGURED 2" in done.stderr + done.stdout
    alert = done.json()["first_alert"]
    assert (alert["op_type"], alert["source"]["line"]) == (
        "Log",
        line_of(PROGRAMS / "run_configures_runtime.py", "# LOG"),
    )


def test_a_program_that_enables_its_own_dump_is_recorded_once(workdir, tmp_path):
    done = tfdbg_run(
        "--json",
        "--",
        "python",
        str(PROGRAMS / "run_own_enable.py"),
        str(tmp_path / "own"),
        cwd=workdir,
    )
    assert done.status == 0, done.stderr[-3000:]
    assert [line for line in done.our_lines() if "its call wins" in line] == [
        f"tfdbg-tui run: the program enables its own dump, and its call wins: recording "
        f"into {tmp_path / 'own' / done.json()['run']}"
    ]
    assert done.json()["tensor_debug_mode"] == "CONCISE_HEALTH"
    # The runner's own run, which held nothing of the program's, is gone.
    assert not list((workdir / "tfdbg-logdir").glob("run_own_enable-*/*"))


@pytest.mark.parametrize(
    "command, message, status",
    [
        ([], "no program to run", codes.EXIT_NO_PROGRAM),
        (["--", "python"], "no program to run", codes.EXIT_NO_PROGRAM),
        (["--", "python", "nowhere.py"], "no such program: nowhere.py", codes.EXIT_NO_PROGRAM),
        (["--", "ls"], "'ls' is not a Python program", codes.EXIT_USAGE),
        (["--ab", "gpu", "--", "python", str(SCRIPT)], "--ab 'gpu': expected", codes.EXIT_USAGE),
    ],
    ids=["nothing", "python-alone", "missing-file", "not-python", "bad-ab"],
)
def test_a_command_line_without_a_program_is_one_line(tmp_path, command, message, status):
    done = subprocess.run(
        tfdbg_command("run", *command),
        cwd=tmp_path,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == status
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert message in done.stderr and "Traceback" not in done.stderr


def test_a_missing_module_is_one_line(tmp_path):
    done = subprocess.run(
        tfdbg_command("run", "--", "python", "-m", "no_such_module"),
        cwd=tmp_path,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == codes.EXIT_NO_PROGRAM
    assert done.stderr.splitlines()[-1] == "tfdbg-tui run: no module named no_such_module"
    assert "Traceback" not in done.stderr


def test_help_lists_every_option():
    done = subprocess.run(
        tfdbg_command("run", "--help"),
        cwd=ROOT,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    for option in (
        "--mode",
        "--logdir",
        "--circular-buffer",
        "--op-regex",
        "--dtypes",
        "--stop-on-alert",
        "--pdb",
        "--no-open",
        "--json",
        "--fail-on-alert",
        "--ab",
        "exit status",
    ):
        assert option in done.stdout
