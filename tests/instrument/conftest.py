"""Shared fixtures: real TensorFlow programs run once per session, their dumps decoded.

Each program runs in a subprocess: TensorFlow's op callbacks, eager mode and device
configuration are process-global, and a fresh process is what a user runs.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")

from tests.instrument.dump_loader import Dump, load_run, load_single_run, run_dirs
from tests.prefetch import made, prefetchable
from tests.program_runs import PROGRAM_TIMEOUT_S, PROGRAMS, ROOT, program_env

ALL_MODES = (
    "NO_TENSOR",
    "CURT_HEALTH",
    "CONCISE_HEALTH",
    "FULL_HEALTH",
    "FULL_STATS",
    "SHAPE",
    "FULL_TENSOR",
)


@contextlib.contextmanager
def program_runs(program: Any, logdir: Any, parts: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Run ``program LOGDIR PART...`` once, each part writing its run into LOGDIR/PART:
    yields {part: its DumpReader, "stdout": the program's output}; closes them after."""
    stdout = run_program([str(program), str(logdir), *parts])
    with opened_runs(logdir, parts, stdout) as dumps:
        yield dumps


@contextlib.contextmanager
def opened_runs(logdir: Any, parts: Sequence[str], stdout: str) -> Iterator[dict[str, Any]]:
    """{part: the DumpReader of the run in LOGDIR/PART, "stdout": ``stdout``}, closed
    after."""
    import reader

    dumps = {part: reader.open_run(logdir / part) for part in parts}
    try:
        yield {**dumps, "stdout": stdout}
    finally:
        for dump in dumps.values():
            dump.close()


def runs_per_part(
    root: Path, parts: Sequence[str], args_of: Callable[[Path, str], list[str]]
) -> dict[str, str]:
    """Run a program once per part, each writing into ROOT/PART (made here) with the
    arguments ``args_of(ROOT/PART, part)``: {part: its stdout}."""
    printed = {}
    for part in parts:
        (root / part).mkdir()
        printed[part] = run_program(args_of(root / part, part))
    return printed


def dumps_and_last_lines(root: Path, printed: dict[str, str]) -> dict[str, tuple[Dump, Any]]:
    """Of `runs_per_part`'s runs: {part: (its one run's dump, the JSON its program
    printed last)}."""
    return {
        part: (load_single_run(str(root / part)), json.loads(stdout.strip().splitlines()[-1]))
        for part, stdout in printed.items()
    }


def run_program(args: list[str]) -> str:
    """Run a Python program to completion; return its stdout, fail with its stderr."""
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.fixture(scope="session")
def constructs(request: pytest.FixtureRequest) -> dict[str, object]:
    """programs/constructs.py run in every mode: {mode: Dump, "api": ..., "logdir": ...}."""
    logdir, stdout = made(request, "constructs")
    import json

    dumps: dict[str, object] = {
        "api": json.loads(stdout.strip().splitlines()[-1]),
        "logdir": logdir,
    }
    for mode in ALL_MODES:
        dumps[mode] = load_run(run_dirs(str(logdir / mode))[0])
    dumps["filtered"] = load_run(run_dirs(str(logdir / "filtered"))[0])
    return dumps


@prefetchable("constructs")
def _run_constructs(logdir: Path) -> tuple[Path, str]:
    return logdir, run_program([str(PROGRAMS / "constructs.py"), str(logdir), *ALL_MODES])


@pytest.fixture(scope="session")
def mnist_dump(request: pytest.FixtureRequest) -> tuple[Dump, str]:
    """The example program, FULL_HEALTH, 4 steps: its dump and its stdout."""
    logdir, stdout = made(request, "mnist_dump")
    return load_run(run_dirs(str(logdir))[0]), stdout


@prefetchable("mnist_dump")
def _run_mnist(logdir: Path) -> tuple[Path, str]:
    return logdir, run_program(
        ["-m", "instrument.examples.debug_mnist", "--max_steps", "4", "--dump_dir", str(logdir)]
    )
