"""A NaN constant is the root cause in every mode that records non-finite values, as in
TensorFlow's dumper: CURT_HEALTH, which cannot tell NaN from infinity, took it for a
deliberate infinity (a mask) and named its consumer instead."""

from __future__ import annotations

import pytest

from reader import format as fmt
from tests.instrument.conftest import program_runs
from tests.program_runs import PROGRAMS, line_of

PROGRAM = PROGRAMS / "nan_constant.py"
MODES = [m for m in fmt.ALERT_MODES]


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    with program_runs(PROGRAM, tmp_path_factory.mktemp("nan_constant"), MODES) as opened:
        yield opened


@pytest.mark.parametrize("mode", MODES)
def test_the_nan_constant_is_the_root_cause(dumps, mode):
    cause = dumps[mode].root_cause()
    assert cause is not None
    assert (cause.alert.op_type, cause.frame.line) == ("Const", line_of(PROGRAM, "# NAN_LINE"))
    assert cause.op is not None and cause.op.constant_nan
