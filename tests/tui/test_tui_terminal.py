"""The real `tfdbg-tui` command in a real terminal (tmux): keys in, screen out."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.synthetic import write_nan_dump

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# How long a screen may take to show what is waited for (a busy machine), and how
# often it is looked at meanwhile.
SCREEN_TIMEOUT_S = 60.0
POLL_S = 0.05


class TmuxTerminal:
    """One tmux server (private socket) running one command in an 80x24 window.

    The command's exit status is written to `status_file`; a wait fails at once, with
    the screen, when the command has exited.
    """

    def __init__(
        self, name: str, command: list[str], status_file: Path, width: int = 80, height: int = 24
    ) -> None:
        self.socket = f"tfdbg-tui-test-{os.getpid()}-{name}"
        self.name = name
        self.status_file = status_file
        shell = f"{shlex.join(command)}; echo $? > {shlex.quote(str(status_file))}; sleep 60"
        completed = self._tmux(
            "new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), shell
        )
        if completed.returncode:
            raise AssertionError(f"tmux could not start: {completed.stderr.strip()}")

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
            env=dict(os.environ, TERM="xterm-256color"),
        )

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name).stdout

    def exit_status(self) -> str | None:
        """The command's exit status once it has exited, else None."""
        try:
            status = self.status_file.read_text().strip()
        except FileNotFoundError:
            return None
        return status or None

    def _poll(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + SCREEN_TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never came; the screen:\n{self.screen()}")
            time.sleep(POLL_S)

    def wait_for_text(self, text: str) -> str:
        """Poll the screen until `text` is on it; fail with the screen after a timeout,
        or as soon as the command has exited."""
        screens = [""]

        def shown() -> bool:
            screens[0] = self.screen()
            if text not in screens[0] and self.exit_status() is not None:
                raise AssertionError(
                    f"the command exited ({self.exit_status()}) before "
                    f"{text!r} appeared; the screen:\n{screens[0]}"
                )
            return text in screens[0]

        self._poll(shown, repr(text))
        return screens[0]

    def wait_for_exit(self) -> str:
        """Poll until the command has exited; its exit status."""
        self._poll(lambda: self.exit_status() is not None, "the command's exit")
        return self.exit_status() or ""

    def send_keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def kill(self) -> None:
        self._tmux("kill-server")


def test_tfdbg_tui_in_tmux_shows_the_hunt_and_quits_on_q(tmp_path):
    write_nan_dump(tmp_path / "logdir")
    # The interpreter running the tests runs the command: no dependence on PATH.
    terminal = TmuxTerminal(
        "hunt",
        [sys.executable, "-m", "tfdbg_tui.cli", str(tmp_path / "logdir"), "--no-mouse"],
        tmp_path / "status",
    )
    try:
        screen = terminal.wait_for_text("▶ 8     log_pr…tf.math.log(probs)")
        assert "1 Alerts" in screen and "3 Graph Execution" in screen
        assert "Log:0" in screen and "-inf 1" in screen
        assert screen.splitlines()[0].lstrip().startswith("finished")
        terminal.send_keys("4")
        terminal.wait_for_text("Go to op's trace")
        terminal.send_keys("Enter")
        # Softmax:0 is now selected: the source shows its line (7).
        terminal.wait_for_text("▶ 7     pro…tf.nn.softmax(logits)")
        terminal.send_keys("z")
        screen = terminal.wait_for_text("   op type")
        assert "Softmax:0" in screen
        terminal.send_keys("q")
        assert terminal.wait_for_exit() == "0"
    finally:
        terminal.kill()


def test_tfdbg_tui_wait_starts_before_the_program_and_opens_its_run(tmp_path):
    logdir = tmp_path / "logdir"  # the program has not made it yet
    terminal = TmuxTerminal(
        "wait",
        [sys.executable, "-m", "tfdbg_tui.cli", str(logdir), "--wait", "--no-mouse"],
        tmp_path / "status",
    )
    try:
        screen = terminal.wait_for_text(" waiting for the first run in ")
        assert "no run yet: it opens as soon as the program writes it" in screen
        write_nan_dump(logdir)
        terminal.wait_for_text("▶ 8     log_pr…tf.math.log(probs)")
        terminal.send_keys("q")
        assert terminal.wait_for_exit() == "0"
    finally:
        terminal.kill()
