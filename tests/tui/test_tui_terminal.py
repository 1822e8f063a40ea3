"""The real `tfdbg-tui` command in a real terminal (tmux): keys in, screen out."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from tests.synthetic import write_nan_dump

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

SCREEN_TIMEOUT_S = 60.0


class TmuxTerminal:
    """One tmux server (private socket) running one command in an 80x24 window."""

    def __init__(self, name: str, command: str, width: int = 80, height: int = 24) -> None:
        self.socket = f"tfdbg-tui-test-{os.getpid()}-{name}"
        self.name = name
        self._tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height),
                   command)

    def _tmux(self, *args: str) -> str:
        completed = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                                   capture_output=True, text=True, timeout=30,
                                   env=dict(os.environ, TERM="xterm-256color"))
        return completed.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait_for_text(self, text: str) -> str:
        """Poll the screen until `text` is on it; fail with the screen after a timeout."""
        deadline = time.monotonic() + SCREEN_TIMEOUT_S
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen:\n{screen}")

    def send_keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def wait_for_signal(self, channel: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "wait-for", channel], timeout=60,
                       check=True)

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30)


def test_tfdbg_tui_in_tmux_shows_the_hunt_and_quits_on_q(tmp_path):
    write_nan_dump(tmp_path / "logdir")
    status_file = tmp_path / "status"
    terminal = TmuxTerminal(
        "hunt", f"tfdbg-tui {tmp_path / 'logdir'} --no-mouse; echo $? > {status_file}; "
        f"tmux -L tfdbg-tui-test-{os.getpid()}-hunt wait-for -S done; sleep 60")
    try:
        screen = terminal.wait_for_text("▶ 8 og_probs = tf.math.log(probs)")
        assert "1 Alerts" in screen and "3 Graph Execution" in screen
        assert "Log:0" in screen and "-inf 1" in screen
        assert screen.splitlines()[0].lstrip().startswith("finished")
        terminal.send_keys("4")
        terminal.wait_for_text("Go to op's trace")
        terminal.send_keys("Enter")
        # Softmax:0 is now selected: the source shows its line (7).
        terminal.wait_for_text("▶ 7 probs = tf.nn.softmax(logits)")
        terminal.send_keys("z")
        screen = terminal.wait_for_text("   op type")
        assert "Softmax:0" in screen
        terminal.send_keys("q")
        terminal.wait_for_signal("done")
        assert status_file.read_text().strip() == "0"
    finally:
        terminal.kill()
