"""Running the test programs (tests/programs) in subprocesses: where they are, their
environment and timeout, the lines they mark and the cases they declare, free ports for
their servers.

Free of TensorFlow, so that a module of the tier without it may import this while
collecting (tests/instrument/conftest.py, which imports TensorFlow, takes these from
here).
"""

from __future__ import annotations

import ast
import os
import pathlib
import socket
from dataclasses import dataclass

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


@dataclass(frozen=True)
class DeclaredCase:
    """A case a test program declares with ``@case(op_type, pattern, expression)``
    (tests/programs/patterns.py): what its diagnosis must say, and the run it is read
    from (the function's own, or, for a case named apart, the function it decorates)."""

    op_type: str
    pattern: str
    expression: str
    run: str


def declared_cases(path: pathlib.Path | str) -> dict[str, DeclaredCase]:
    """The ``@case(...)`` declarations of a test program, by case, in the order they are
    written; read with `ast`, so that collecting needs no TensorFlow (the program
    imports it)."""
    cases: dict[str, DeclaredCase] = {}
    for node in ast.parse(pathlib.Path(path).read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if not (
                isinstance(decorator, ast.Call)
                and isinstance(decorator.func, ast.Name)
                and decorator.func.id == "case"
            ):
                continue
            op_type, pattern, expression = (ast.literal_eval(a) for a in decorator.args)
            named = {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}
            name = named.get("name", node.name)
            assert name not in cases, f"{path}: case {name} declared twice"
            cases[name] = DeclaredCase(op_type, pattern, expression, node.name)
    return cases


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
