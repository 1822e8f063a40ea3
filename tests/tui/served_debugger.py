"""`tfdbg-tui serve` started for a test: its URL, its log, the app processes its tabs
run (read from /proc), and its stop."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# How long the server may take to listen (a busy machine), an app to start or end.
START_TIMEOUT_S = 60.0
POLL_S = 0.05


class ServedDebugger:
    """``tfdbg-tui serve LOGDIR --port 0 ARGS`` in a process of its own; `url` is the
    URL it printed, with its token."""

    def __init__(self, logdir: Path, *args: str, cwd: Path | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tfdbg_tui.cli", "serve", str(logdir), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        for stream, lines in (
            (self.process.stdout, self.stdout),
            (self.process.stderr, self.stderr),
        ):
            threading.Thread(target=_collect, args=(stream, lines), daemon=True).start()
        self.poll(lambda: any("?token=" in line for line in self.stdout), "the URL")
        self.url = next(
            re.search(r"http://\S+", line).group(0)  # type: ignore[union-attr]
            for line in self.stdout
            if "?token=" in line
        )
        base, token = str(self.url).split("/?token=")
        self.base: str = base
        self.token: str = token

    def poll(self, done: Callable[[], bool], what: str, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if self.process.poll() is not None and not done():
                raise AssertionError(
                    f"serve exited ({self.process.returncode}) before {what}: {self.log()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never came: {self.log()}")
            time.sleep(POLL_S)

    def log(self) -> str:
        return "".join(self.stdout + self.stderr)

    def apps(self) -> list[int]:
        """The pids of the app processes serving tabs now (the interpreters below the
        server that run `tfdbg_tui.cli`, not the shells that start them)."""
        return [pid for pid in _descendants(self.process.pid) if _runs_the_app(pid)]

    def stop(self) -> int:
        """Ctrl+C, as a user stops it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"serve did not stop on SIGINT: {self.log()}") from None


async def poll_until(
    done: Callable[[], bool], what: str, timeout_s: float = START_TIMEOUT_S
) -> None:
    """Wait, without blocking the event loop, until ``done()``; fail after a timeout."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} never came")
        await asyncio.sleep(POLL_S)


def _collect(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name in parentheses may hold spaces: the fields after its ')'.
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _runs_the_app(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return (
        state != "Z" and "python" in os.path.basename(argv[0].decode()) and b"tfdbg_tui.cli" in argv
    )
