"""Running the test programs (tests/programs) in subprocesses: where they are, their
environment and timeout, the lines they mark, free ports for their servers.

Free of TensorFlow, so that a module of the tier without it may import this while
collecting (tests/instrument/conftest.py, which imports TensorFlow, takes these from
here).
"""

from __future__ import annotations

import os
import pathlib
import socket

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "programs"
PROGRAM_TIMEOUT_S = 240


def program_env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def line_of(path: pathlib.Path | str, marker: str) -> int:
    """1-based number of the line of ``path`` that contains ``marker``."""
    for number, text in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if marker in text:
            return number
    raise AssertionError(f"{marker!r} not in {path}")


def free_ports(count: int) -> list[int]:
    """`count` TCP ports of 127.0.0.1 free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()
