"""Fixtures for the TUI tests: real dumps of the example program, synthetic dumps,
and helpers that wait for the app instead of sleeping."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.synthetic import write_big_dump, write_nan_dump

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_MODULE = "instrument.examples.debug_mnist"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run `async def` tests in a fresh event loop (no async plugin is needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True


@pytest.fixture
def nan_logdir(tmp_path):
    """A finished synthetic run whose `Log` op makes the first -inf."""
    write_nan_dump(tmp_path / "logdir")
    return tmp_path / "logdir"


@pytest.fixture(scope="session")
def big_logdir(tmp_path_factory):
    """A finished run of 1,000,000 graph traces (one NaN every 100,000)."""
    logdir = tmp_path_factory.mktemp("big")
    write_big_dump(logdir, 1_000_000, alert_every=100_000)
    return logdir


@pytest.fixture(scope="session")
def example_logdir(tmp_path_factory):
    """A real dump of the example program (TensorFlow), made once per session."""
    if (
        importlib.util.find_spec("instrument.examples") is None
        or importlib.util.find_spec(EXAMPLE_MODULE) is None
    ):
        pytest.skip(f"{EXAMPLE_MODULE} is not in this checkout yet")
    logdir = tmp_path_factory.mktemp("example") / "logdir"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            EXAMPLE_MODULE,
            "--dump_dir",
            str(logdir),
            "--dump_tensor_debug_mode",
            "FULL_HEALTH",
            "--dump_circular_buffer_size",
            "-1",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if completed.returncode != 0:
        raise AssertionError(f"the example program failed:\n{completed.stderr[-3000:]}")
    return logdir
