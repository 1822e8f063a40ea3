"""What an eager execution names (format 2.8, `reader.format.NAMING_OPS`), decoded
independently: a `VarHandleOp` its variable, a `RestoreV2` its checkpoint keys; no
other execution carries names, in any mode."""

from __future__ import annotations

import pytest

from tests.instrument.conftest import run_program
from tests.instrument.dump_loader import load_run, run_dirs
from tests.program_runs import PROGRAMS

MODES = ("NO_TENSOR", "FULL_HEALTH", "FULL_TENSOR")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("eager_names")
    run_program([str(PROGRAMS / "eager_names.py"), str(logdir), *MODES])
    return {mode: load_run(run_dirs(str(logdir / mode))[0]) for mode in MODES}


@pytest.mark.parametrize("mode", MODES)
def test_a_variable_and_a_restore_carry_their_names(dumps, mode):
    named = {e["op"]: e["nm"] for e in dumps[mode].executions if "nm" in e}
    assert named == {
        "VarHandleOp": ["layer/weights"],
        "RestoreV2": ["weights/.ATTRIBUTES/VARIABLE_VALUE"],
    }
    restore = next(e for e in dumps[mode].executions if e["op"] == "RestoreV2")
    assert len(restore["out"]) == len(restore["nm"])
