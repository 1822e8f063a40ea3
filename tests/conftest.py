"""Fixtures shared by the reader, report and TUI tests: real TensorFlow dumps made
once per session."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERNS_PROGRAM = os.path.join(REPO, "tests", "reader", "tf_programs", "patterns.py")
HARM_PROGRAM = os.path.join(REPO, "tests", "reader", "tf_programs", "harm.py")


@pytest.fixture(scope="session")
def pattern_dumps(tmp_path_factory) -> str:
    """One process runs every case of tests/reader/tf_programs/patterns.py (one bug per
    NaN pattern, and `late_log`, which breaks after 250 good steps), a run per case;
    returns the directory holding a logdir per case."""
    pytest.importorskip("tensorflow")
    root = str(tmp_path_factory.mktemp("patterns"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    completed = subprocess.run([sys.executable, PATTERNS_PROGRAM, root], env=env,
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return root


@pytest.fixture(scope="session")
def harm_dumps(tmp_path_factory) -> str:
    """One process runs every case of tests/reader/tf_programs/harm.py (healthy runs
    with infinities, and harm that the first alert hides), a run per case; returns the
    directory holding a logdir per case."""
    pytest.importorskip("tensorflow")
    root = str(tmp_path_factory.mktemp("harm"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    completed = subprocess.run([sys.executable, HARM_PROGRAM, root], env=env,
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return root


@pytest.fixture(scope="session")
def tf_written(tmp_path_factory) -> str:
    """A directory with one dump per mode written by TensorFlow's own dumper
    (tests/reader/tf_programs/tf_dumper.py), ``<MODE>/``, and what TensorFlow's
    `DebugDataReader` says of each, ``<MODE>.expected.json``."""
    pytest.importorskip("tensorflow")
    root = str(tmp_path_factory.mktemp("tf_written"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, os.path.join(REPO, "tests", "reader", "tf_programs",
                                                        "tf_dumper.py"), root],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return root
