"""Fixtures shared by the reader, report and TUI tests: real TensorFlow dumps made
once per session."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests import prefetch
from tests.prefetch import made, prefetchable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every program a test runs under TensorFlow (or TensorFlow's own dumper) lives here.
PROGRAMS = os.path.join(REPO, "tests", "programs")
PATTERNS_PROGRAM = os.path.join(PROGRAMS, "patterns.py")
HARM_PROGRAM = os.path.join(PROGRAMS, "harm.py")
PROOF_PROGRAM = os.path.join(PROGRAMS, "proof.py")
PHASES_PROGRAM = os.path.join(PROGRAMS, "phases.py")
TRENDS_PROGRAM = os.path.join(PROGRAMS, "trends.py")
CHAINS_PROGRAM = os.path.join(PROGRAMS, "chains.py")
WATCHED_PROGRAM = os.path.join(PROGRAMS, "watched.py")

# The `tf` tier: tests that need TensorFlow. Whole folders of them, and elsewhere the
# tests that use a fixture which runs a TensorFlow program.
TF_FOLDERS = ("instrument", "flight", "commands")
TF_FIXTURES = frozenset(
    {
        "pattern_dumps",
        "harm_dumps",
        "harm_tf_dumps",
        "tf_written",
        "trend_dumps",  # here
        "chain_dumps",
        "tf_dumps",
        "runs",  # tests/reader (its conftest, test_diff)
        "example_logdir",
        "tensorflow_dump",
        "run_pair",  # tests/tui
        "watched_logdir",
        "proof_dumps",
        "phase_dumps",
    }
)


def _excludes_tf(config) -> bool:
    """Whether the marker expression leaves the `tf` tier out (`-m "not tf"`, also with
    `and` terms)."""
    words = (config.option.markexpr or "").split()
    return "or" not in words and any(
        words[i : i + 2] == ["not", "tf"] for i in range(len(words) - 1)
    )


def pytest_ignore_collect(collection_path, config):
    """Without the `tf` tier, the TensorFlow folders are not collected at all: their
    modules import TensorFlow (seconds) only for their tests to be deselected."""
    if (
        _excludes_tf(config)
        and collection_path.name in TF_FOLDERS
        and collection_path.is_dir()
        and str(collection_path.parent) == os.path.join(REPO, "tests")
    ):
        return True
    return None


def pytest_collection_finish(session):
    """Without the `tf` tier, collecting must not have imported TensorFlow: each worker
    would pay its import (seconds) where it is installed, and where it is not (CI's
    other Pythons) a module that imports it is skipped whole, its other tests with it.
    Helpers that tests of both tiers use live in modules free of it
    (tests/program_runs.py). Then the programs of the fixtures the tests will use start
    in the background (tests/prefetch.py)."""
    if _excludes_tf(session.config) and "tensorflow" in sys.modules:
        raise pytest.UsageError("collecting the tests without TensorFlow imported it")
    prefetch.start(session)


def pytest_sessionfinish(session, exitstatus):
    prefetch.stop(wait=exitstatus != pytest.ExitCode.INTERRUPTED)


def pytest_collection_modifyitems(config, items):
    """Mark the tests that need TensorFlow `tf` (`-m "not tf"` runs without it; a few
    tests carry the mark themselves), and leave the benchmarks out unless the marker
    expression names them (`-m benchmark`): a `-m` given on the command line replaces
    one in `addopts`, so `-m "not tf"` alone would otherwise run them."""
    tests = os.path.join(REPO, "tests")
    for item in items:
        folder = os.path.relpath(str(item.path), tests).split(os.sep)[0]
        if folder in TF_FOLDERS or TF_FIXTURES.intersection(item.fixturenames):
            item.add_marker(pytest.mark.tf)
    if "benchmark" not in (config.option.markexpr or ""):
        benchmarks = [item for item in items if item.get_closest_marker("benchmark")]
        if benchmarks:
            config.hook.pytest_deselected(items=benchmarks)
            items[:] = [item for item in items if not item.get_closest_marker("benchmark")]


@pytest.fixture(scope="session")
def pattern_dumps(request) -> str:
    """One process runs every case of tests/programs/patterns.py (one bug per
    NaN pattern, and `late_log`, which breaks after 250 good steps), a run per case;
    returns the directory holding a logdir per case."""
    return made(request, "pattern_dumps")


@pytest.fixture(scope="session")
def harm_dumps(request) -> str:
    """One process runs every case of tests/programs/harm.py (healthy runs
    with infinities, and harm that the first alert hides), a run per case; returns the
    directory holding a logdir per case."""
    return made(request, "harm_dumps")


@pytest.fixture(scope="session")
def trend_dumps(request) -> str:
    """One process runs every case of tests/programs/trends.py (Keras fits in
    FULL_STATS: a learning rate raised mid-run, dead ReLUs, float16 near its limit, a
    healthy fit); returns the directory holding a logdir per case and facts.json."""
    return made(request, "trend_dumps")


@pytest.fixture(scope="session")
def chain_dumps(request) -> str:
    """One process runs every case of tests/programs/chains.py (an origin of the chain
    upstream per case, and the fixes that fit), a FULL_HEALTH run per case, and one
    case again in CURT_HEALTH (``sigmoid_saturation-CURT_HEALTH``); returns the
    directory holding a logdir per case."""
    return made(request, "chain_dumps")


@pytest.fixture(scope="session")
def watched_logdir(request) -> str:
    """A logdir of the watch tier's pair: tests/programs/watched.py's Keras fit whose
    step 5 saturates, watched, stopped at the hit, and the replay of that step."""
    return made(request, "watched_logdir")


@pytest.fixture(scope="session")
def proof_dumps(request) -> str:
    """One process runs every case of tests/programs/proof.py (an op per fix of the
    proof's table, in FULL_TENSOR, and one in FULL_HEALTH); returns the directory
    holding a logdir per case."""
    return made(request, "proof_dumps")


@pytest.fixture(scope="session")
def phase_dumps(request) -> str:
    """One process runs every case of tests/programs/phases.py (values made outside a
    step: a restore, set_weights, an initial value; a metric's NaN; a prefetched
    generator's); returns the directory holding a logdir per case."""
    return made(request, "phase_dumps")


def _program(args: list[str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Run a Python program of tests/programs under TensorFlow, quietly, on the CPU."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _cases_maker(name: str, program: str) -> None:
    """Register the maker of fixture ``name``: ``program ROOT`` (a logdir per case under
    ROOT) run once; its result is ROOT."""

    @prefetchable(name)
    def run_cases(root: Path) -> str:
        completed = _program([program, str(root)])
        assert completed.returncode == 0, completed.stderr[-3000:]
        return str(root)


for _name, _program_path in (
    ("pattern_dumps", PATTERNS_PROGRAM),
    ("harm_dumps", HARM_PROGRAM),
    ("trend_dumps", TRENDS_PROGRAM),
    ("chain_dumps", CHAINS_PROGRAM),
    ("proof_dumps", PROOF_PROGRAM),
    ("phase_dumps", PHASES_PROGRAM),
):
    _cases_maker(_name, _program_path)


@prefetchable("watched_logdir")
def _watched_logdir(root: Path) -> str:
    completed = _program([WATCHED_PROGRAM, str(root), "fit_saturated"])
    assert completed.returncode == 0 and "CAUGHT" in completed.stdout, completed.stderr[-3000:]
    return str(root)


# The harm cases run under TensorFlow's own dumper (`harm_tf_dumps`), as CASE:MODE.
HARM_TF_CASES = (
    "masked_attention:FULL_HEALTH",
    "masked_attention:CURT_HEALTH",
    "masked_logsumexp:CURT_HEALTH",
    "where_trap:FULL_HEALTH",
    "mixed_precision:FULL_HEALTH",
    "dataset_batch:FULL_TENSOR",
    "keras_data:FULL_TENSOR",
    "py_function:FULL_HEALTH",
    "variable_initial:FULL_HEALTH",
    "diverging:FULL_HEALTH",
)


@pytest.fixture(scope="session")
def harm_tf_dumps(request) -> str:
    """tests/programs/harm.py's cases `HARM_TF_CASES` under TensorFlow's own dumper,
    one process; returns the directory holding ``<case>-<MODE>`` for each."""
    return made(request, "harm_tf_dumps")


@prefetchable("harm_tf_dumps")
def _harm_tf_dumps(root: Path) -> str:
    completed = _program([HARM_PROGRAM, str(root), "--tensorflow", *HARM_TF_CASES])
    assert completed.returncode == 0, completed.stderr[-3000:]
    return str(root)


@pytest.fixture(scope="session")
def tf_written(request) -> str:
    """A directory with one dump per mode written by TensorFlow's own dumper
    (tests/programs/tf_dumper.py), ``<MODE>/``, and what TensorFlow's
    `DebugDataReader` says of each, ``<MODE>.expected.json``."""
    return made(request, "tf_written")


@prefetchable("tf_written")
def _tf_written(root: Path) -> str:
    done = _program([os.path.join(PROGRAMS, "tf_dumper.py"), str(root)], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return str(root)


# Hypothesis profiles of the property tests (tests/reader/test_hostile_values.py,
# tests/reader/test_hostile_analyses.py): "hostile-ci", the default, runs with every
# test run in well under a minute; "hostile-long" is the benchmark-marked search
# (README, tests). HYPOTHESIS_PROFILE selects another. Their examples come from one seed
# per session (`tests.reader.hostile_dumps.hostile_seed`), fixed so that a run is
# repeatable; the session's summary prints it.
settings.register_profile(
    "hostile-ci", max_examples=300, deadline=10_000, database=None, print_blob=True
)
settings.register_profile(
    "hostile-long", max_examples=3000, deadline=30_000, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "hostile-ci"))


def pytest_configure(config):
    """``HOSTILE_SEED=random`` draws the hostile searches' seed here, once, into the
    environment the xdist workers inherit, so that every worker searches from it."""
    if os.environ.get("HOSTILE_SEED") == "random":
        import random

        os.environ["HOSTILE_SEED"] = str(random.getrandbits(32))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After a session that ran the hostile-dump searches (also under ``-q``): their
    seed, to repeat the run."""
    from tests.reader.hostile_dumps import hostile_seed

    ran = [
        report
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, ())
        if "/test_hostile_" in report.nodeid
    ]
    if ran:
        terminalreporter.write_line(
            f"hostile-dump searches: seed {hostile_seed()} (HOSTILE_SEED=<seed> repeats "
            "the run, HOSTILE_SEED=random draws a seed)"
        )
