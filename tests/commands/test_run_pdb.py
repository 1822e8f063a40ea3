"""`tfdbg-tui run --pdb` in a real terminal (tmux): the program stops in pdb at the
user's line that made the first harmful NaN, `culprit` holds the op and its values,
and `continue` runs the program on to its end."""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import pytest

from tests.commands.conftest import PROGRAMS, ROOT
from tests.instrument.conftest import line_of
from tests.tui.test_tui_terminal import TmuxTerminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SCRIPT = PROGRAMS / "run_script.py"


def test_pdb_stops_at_the_log_with_the_culprit_and_continues(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "values.txt").write_text("0 1 2.5\n")
    command = " ".join(shlex.quote(part) for part in [
        sys.executable, "-m", "tfdbg_tui.cli", "run", "--pdb", "--mode", "FULL_TENSOR",
        "--no-open", "--", "python", str(SCRIPT), "--data", "data/values.txt"])
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    terminal = TmuxTerminal(
        "pdb", f"cd {shlex.quote(str(tmp_path))} && TF_CPP_MIN_LOG_LEVEL=3 "
        f"PYTHONPATH={shlex.quote(path)} {command}; echo STATUS=$?; sleep 120",
        width=160, height=50)
    try:
        screen = terminal.wait_for_text("(Pdb)")
        line = line_of(SCRIPT, "# LOG_LINE")
        assert f"> {SCRIPT}({line})<module>()" in screen
        assert "culprit: Log 'Log:0'" in screen
        terminal.send_keys("p culprit.op_type, culprit.output.tolist()", "Enter")
        terminal.wait_for_text("('Log', [-inf, 0.0, 0.9162")
        terminal.send_keys("p culprit.diagnosis", "Enter")
        terminal.wait_for_text("log_of_nonpositive")
        terminal.send_keys("continue", "Enter")
        screen = terminal.wait_for_text("STATUS=")
        # The program ran on to its end, then the report of its run was printed.
        assert '"logs": [-Infinity, 0.0' in screen
        assert "Root cause: Log" in screen
        assert "STATUS=0" in screen
    finally:
        terminal.kill()
