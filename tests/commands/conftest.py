"""Running `tfdbg-tui run` (and `python -m instrument`) on real programs, in
subprocesses: the command line, the program's output, and the run it recorded."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

pytest.importorskip("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
TIMEOUT_S = 300


def run_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def tfdbg_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tfdbg_tui.cli", *args]


@dataclass
class Finished:
    """A finished `tfdbg-tui run`: its status, stdout and stderr."""

    status: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)

    def our_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("tfdbg-tui run:")]


def tfdbg_run(*args: str, cwd: pathlib.Path, env: dict[str, str] | None = None) -> Finished:
    """`tfdbg-tui run ARGS` to its end, in a pipe (no terminal: the report is printed)."""
    done = subprocess.run(
        tfdbg_command("run", *args),
        cwd=cwd,
        env=env or run_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    return Finished(done.returncode, done.stdout, done.stderr)


def interrupt_when(process: subprocess.Popen, line: str, pid: int | None = None) -> str:
    """Read the process's stdout until ``line``, then send SIGINT (to ``pid``, else the
    process); return what was read."""
    assert process.stdout is not None
    seen = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        text = process.stdout.readline()
        if not text:
            break
        seen.append(text)
        if line in text:
            os.kill(pid or process.pid, signal.SIGINT)
            break
    return "".join(seen)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A working directory with the script's data file at a relative path."""
    work = tmp_path_factory.mktemp("work")
    (work / "data").mkdir()
    (work / "data" / "values.txt").write_text("0 1 2.5\n")
    return work
