"""Fixtures for reader tests; the synthetic dump builders live in `tests/synthetic.py`."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.program_runs import declared_cases
from tests.synthetic import make_run


@pytest.fixture
def logdir(tmp_path):
    return str(tmp_path / "logdir")


@pytest.fixture
def run(logdir):
    r = make_run(logdir)
    yield r
    r.writer.close()


# -- real TensorFlow dumps --------------------------------------------------------------

TF_PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "programs")
# (program, the root cause's op type, its kind): each program marks its bug line "# BUG".
TF_BUGS = {
    "eager_log": ("Log", "eager"),
    "function_log": ("Log", "graph"),
    "while_sqrt": ("Sqrt", "graph"),
    "gradient_sqrt": ("SqrtGrad", "graph"),
    "nested_log": ("Log", "graph"),
}


@dataclass
class TfDump:
    """One real dump: the program that made it, its logdir, and its marked bug line."""

    name: str
    program: str
    logdir: str
    bug_line: int
    returncode: int
    stderr: str


@pytest.fixture(scope="session")
def tf_dumps(tmp_path_factory) -> dict[str, TfDump]:
    """Run every program of tests/programs once per session, in parallel."""
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("tf_dumps")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    started = {}
    for name in TF_BUGS:
        program = os.path.join(TF_PROGRAMS, f"{name}.py")
        logdir = str(root / name)
        started[name] = (
            program,
            logdir,
            subprocess.Popen(
                [sys.executable, program, logdir],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    dumps = {}
    for name, (program, logdir, process) in started.items():
        _, stderr = process.communicate(timeout=600)
        with open(program, encoding="utf-8") as f:
            bug_line = next(n for n, line in enumerate(f, 1) if line.rstrip().endswith("# BUG"))
        dumps[name] = TfDump(name, program, logdir, bug_line, process.returncode, stderr)
    return dumps


# The cases of tests/programs/patterns.py, each declared there with `@case`.
PATTERN_PROGRAM_CASES = declared_cases(os.path.join(TF_PROGRAMS, "patterns.py"))
# case -> (op of the diagnosed alert, pattern, expression). Every case diagnoses its
# root cause, but a case named apart (`inf_minus_inf`), which diagnoses the first alert
# of its op on another case's run (the user selected it).
PATTERN_CASES = {
    name: (case.op_type, case.pattern, case.expression)
    for name, case in PATTERN_PROGRAM_CASES.items()
}
# Patterns tested on tests/programs/harm.py (tests/reader/test_harm_tf.py):
# pattern -> case; "unknown" has no case since Atanh has its domain.
HARM_PATTERN_CASES = {
    "loss_scale_collapse": "loss_scale_collapse",
    "where_gradient_trap": "where_trap",
    "library_nan": "adam_epsilon",
    "divergence": "diverging",
    "spike": "outlier_batch",
    "domain_error": "acos_domain",
    "contained": "masked_attention",
    "unknown": None,
}
# Cases diagnosed on another case's run.
PATTERN_RUNS = {name: case.run for name, case in PATTERN_PROGRAM_CASES.items() if case.run != name}
