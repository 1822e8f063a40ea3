"""`tfdbg-tui run` in a real terminal (tmux): the TUI opens on the run when the program
ends; with `--pdb` the program stops in pdb at the user's line that made the first
harmful NaN, `culprit` holds the op and its values, and `continue` runs it on."""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import pytest

from tests.commands.conftest import PROGRAMS, ROOT
from tests.program_runs import line_of
from tests.tui.test_tui_terminal import TmuxTerminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SCRIPT = PROGRAMS / "run_script.py"


def _terminal(
    name: str, tmp_path, *options: str, width: int = 160, height: int = 50
) -> TmuxTerminal:
    """`tfdbg-tui run OPTIONS -- python run_script.py` in tmux, in a directory with the
    script's data; its exit status is the terminal's `exit_status()`."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "values.txt").write_text("0 1 2.5\n")
    command = " ".join(
        shlex.quote(part)
        for part in [
            sys.executable,
            "-m",
            "tfdbg_tui.cli",
            "run",
            *options,
            "--",
            "python",
            str(SCRIPT),
            "--data",
            "data/values.txt",
        ]
    )
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    shell = (
        f"cd {shlex.quote(str(tmp_path))} && TF_CPP_MIN_LOG_LEVEL=3 "
        f"PYTHONPATH={shlex.quote(path)} {command}"
    )
    return TmuxTerminal(name, ["sh", "-c", shell], tmp_path / "status", width=width, height=height)


def test_the_tui_opens_on_the_run_when_the_program_ends(tmp_path):
    terminal = _terminal("open", tmp_path, "--no-mouse", width=80, height=24)
    try:
        screen = terminal.wait_for_text("Log:0")
        assert "1 Alerts" in screen and "finished" in screen
        terminal.send_keys("q")
        assert terminal.wait_for_exit() == "0"
    finally:
        terminal.kill()


def test_pdb_stops_at_the_log_with_the_culprit_and_continues(tmp_path):
    terminal = _terminal("pdb", tmp_path, "--pdb", "--mode", "FULL_TENSOR", "--no-open")
    try:
        screen = terminal.wait_for_text("(Pdb)")
        line = line_of(SCRIPT, "# LOG_LINE")
        assert f"> {SCRIPT}({line})<module>()" in screen
        assert "culprit: Log 'Log:0'" in screen
        terminal.send_keys("p culprit.op_type, culprit.output.tolist()", "Enter")
        terminal.wait_for_text("('Log', [-inf, 0.0, 0.9162")
        terminal.send_keys("p culprit.diagnosis", "Enter")
        terminal.wait_for_text("log_of_nonpositive")
        # The Log's input, a constant made outside any op, has no value in the dump: the
        # op's own call held it, and the proof reruns the Log on it.
        terminal.send_keys("p culprit.proof.holds, culprit.inputs", "Enter")
        terminal.wait_for_text("(True, {'tensor 0': array([0. , 1. , 2.5], dtype=float32)})")
        terminal.send_keys("continue", "Enter")
        assert terminal.wait_for_exit() == "0"
        # The program ran on to its end, then the report of its run was printed.
        screen = terminal.screen()
        assert '"logs": [-Infinity, 0.0' in screen
        assert "Root cause: Log" in screen
    finally:
        terminal.kill()
