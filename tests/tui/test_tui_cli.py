"""`tfdbg-tui LOGDIR` on paths it cannot open: one line on stderr, a documented status."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reader import format as fmt
from tests.synthetic import write_nan_dump
from tfdbg_tui import exit_codes

# The console script installed with the interpreter running the tests (a venv's, a
# pyenv version's), not whichever `tfdbg-tui` comes first on PATH.
TFDBG_TUI = os.path.join(os.path.dirname(sys.executable), "tfdbg-tui")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TFDBG_TUI, *args], capture_output=True, text=True, timeout=60)


def assert_one_line_error(completed: subprocess.CompletedProcess, status: int) -> None:
    assert completed.returncode == status, completed.stderr
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfdbg-tui: "), completed.stderr
    assert "Traceback" not in completed.stderr


def test_missing_path(tmp_path):
    assert_one_line_error(run_cli(str(tmp_path / "nope")), exit_codes.EXIT_NO_DUMP)


def test_where_a_run_may_still_appear_the_error_says_that_wait_waits(tmp_path):
    for path in (tmp_path / "nope", tmp_path):  # missing (its parent is there), empty
        completed = run_cli(str(path))
        assert_one_line_error(completed, exit_codes.EXIT_NO_DUMP)
        assert completed.stderr.rstrip().endswith("; add --wait to wait for the first run")
    write_nan_dump(tmp_path / "logdir")
    completed = run_cli(str(tmp_path / "logdir"), "--run", "2099")
    assert_one_line_error(completed, exit_codes.EXIT_NO_DUMP)
    assert completed.stderr.rstrip().endswith("; add --wait to wait for it")


def test_wait_fails_at_once_where_no_run_can_appear(tmp_path):
    """(Where one can, the app waits: tests/tui/test_tui_wait.py, and in a terminal
    test_tui_terminal.py.)"""
    (tmp_path / "file.txt").write_text("not a logdir")
    for path, why in (
        (tmp_path / "no_parent" / "logdir", "no such directory (nor its parent)"),
        (tmp_path / "file.txt", "not a directory"),
    ):
        completed = run_cli(str(path), "--wait")
        assert_one_line_error(completed, exit_codes.EXIT_NO_DUMP)
        assert completed.stderr.strip() == f"tfdbg-tui: {path}: {why}"


@pytest.mark.parametrize("command", [[], ["report"]], ids=["tui", "report"])
def test_a_regular_file_is_not_a_directory(tmp_path, command):
    path = tmp_path / "file.txt"
    path.write_text("not a logdir")
    completed = run_cli(*command, str(path))
    assert completed.returncode == exit_codes.EXIT_NO_DUMP and "Traceback" not in completed.stderr
    assert completed.stderr.strip().splitlines() == [
        f"tfdbg-tui{' report' if command else ''}: {path}: not a directory"
    ]


@pytest.fixture(scope="module")
def tensorflow_dump(tmp_path_factory):
    """A logdir written by TensorFlow's own dumper (a real one, on a log of zero)."""
    logdir = tmp_path_factory.mktemp("tf_dump") / "logdir"
    program = (
        "import tensorflow as tf\n"
        f"tf.debugging.experimental.enable_dump_debug_info({str(logdir)!r}, "
        "tensor_debug_mode='FULL_HEALTH')\n"
        "tf.math.log(tf.constant([0.0]))\n"
        "tf.debugging.experimental.disable_dump_debug_info()\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert any(logdir.glob("tfdbg_events.*.metadata"))
    return logdir


def test_a_tensorflow_dump_opens_and_its_parent_says_where_it_is(tensorflow_dump):
    completed = run_cli("report", str(tensorflow_dump))
    assert completed.returncode == exit_codes.EXIT_OK, completed.stderr
    assert "written by TensorFlow's own dumper" in completed.stdout
    assert "Root cause: Log" in completed.stdout
    for command in ([], ["report"]):
        completed = run_cli(*command, str(tensorflow_dump.parent))
        assert completed.returncode == exit_codes.EXIT_NO_DUMP
        [line] = completed.stderr.strip().splitlines()
        assert "TensorFlow's dumps are in logdir: open one" in line


def test_empty_and_foreign_directories(tmp_path):
    assert_one_line_error(run_cli(str(tmp_path)), exit_codes.EXIT_NO_DUMP)
    (tmp_path / "notes.txt").write_text("not a dump")
    (tmp_path / "some_dir").mkdir()
    assert_one_line_error(run_cli(str(tmp_path)), exit_codes.EXIT_NO_DUMP)


def test_unknown_run_id(tmp_path):
    write_nan_dump(tmp_path)
    assert_one_line_error(run_cli(str(tmp_path), "--run", "no-such-run"), exit_codes.EXIT_NO_DUMP)


def test_newer_major_format(tmp_path, monkeypatch):
    monkeypatch.setattr(fmt, "LOCAL_FORMAT_VERSION", (fmt.FORMAT_VERSION[0] + 1, 0))
    write_nan_dump(tmp_path)
    assert_one_line_error(run_cli(str(tmp_path)), exit_codes.EXIT_NEWER_FORMAT)


@pytest.mark.parametrize("args", [["--no-such-option"], []])
def test_bad_command_line(args):
    completed = run_cli(*args)
    assert completed.returncode == exit_codes.EXIT_USAGE
    assert "Traceback" not in completed.stderr


def test_version_names_the_package_and_the_dump_format_it_reads():
    from importlib.metadata import version

    completed = run_cli("--version")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == (
        f"tfdbg-tui {version('tfdbg-tui')} "
        f"(dump format {fmt.FORMAT_VERSION[0]}.{fmt.FORMAT_VERSION[1]})"
    )


def test_help_names_exit_statuses():
    completed = run_cli("--help")
    assert completed.returncode == 0
    assert "exit status" in completed.stdout and "--no-mouse" in completed.stdout


@pytest.mark.tf
def test_demo_runs_the_example_and_writes_a_dump(tmp_path):
    pytest.importorskip("instrument.examples.debug_mnist")
    logdir = tmp_path / "demo"
    completed = run_cli("demo", "--logdir", str(logdir), "--max_steps", "2", "--no-tui")
    assert completed.returncode == exit_codes.EXIT_OK, completed.stderr[-2000:]
    assert "Accuracy at step 1" in completed.stderr  # the example's progress, shown
    assert completed.stdout.strip() == str(logdir)
    import reader

    dump = reader.open_run(logdir)
    assert dump.num_traces > 0 and dump.metadata.tensor_debug_mode == "FULL_HEALTH"


def test_demo_failure_is_one_line_and_status_6(tmp_path, monkeypatch, capsys):
    from tfdbg_tui.commands import demo

    monkeypatch.setattr(demo, "EXAMPLE_MODULE", "no_such_module_for_the_demo")
    assert demo.main(["--logdir", str(tmp_path), "--no-tui"]) == exit_codes.EXIT_DEMO_FAILED
    assert "tfdbg-tui: the example program failed" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{logdir}"],
        ["report", "{logdir}", "--json"],
        ["diff", "{logdir}", "{logdir}"],
        ["diff", "{logdir}", "{logdir}", "--json"],
        ["--help"],
        ["report", "--help"],
        ["diff", "--help"],
        ["--version"],
    ],
    ids=[
        "report",
        "report-json",
        "diff",
        "diff-json",
        "help",
        "report-help",
        "diff-help",
        "version",
    ],
)
def test_a_closed_output_pipe_ends_quietly(tmp_path, args):
    """`tfdbg-tui report LOGDIR | head`: when the reader has gone, every output path
    ends without a word, with the status a shell gives a command SIGPIPE stopped
    (help and version text end with 0, as argparse has it)."""
    write_nan_dump(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        completed = subprocess.run(
            [TFDBG_TUI, *(a.format(logdir=tmp_path) for a in args)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    # argparse ignores a closed pipe while it prints help or the version from Python
    # 3.11 on (its _print_message catches OSError); 3.10's raises, and the command
    # then ends as on any other closed pipe.
    informational = args[-1] in ("--help", "--version") and sys.version_info >= (3, 11)
    assert completed.returncode == (
        exit_codes.EXIT_OK if informational else exit_codes.EXIT_PIPE_CLOSED
    )
    assert exit_codes.EXIT_PIPE_CLOSED == 141
    assert completed.stderr == ""
