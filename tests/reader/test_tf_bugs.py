"""Root cause on real dumps of five NaN/inf bugs, written by `instrument` under TensorFlow.

Each program in tests/programs marks its bug line with ``# BUG``; the root
cause must name that op and that line of that file.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import reader
from tests.present import present
from tests.reader.conftest import TF_BUGS


@pytest.mark.parametrize("name", sorted(TF_BUGS))
def test_root_cause_names_the_buggy_op_and_line(tf_dumps, name):
    dump = tf_dumps[name]
    assert dump.returncode == 0, dump.stderr[-2000:]
    op_type, kind = TF_BUGS[name]
    opened = reader.open_run(dump.logdir)
    assert opened.finished and opened.damage == ()
    cause = opened.root_cause()
    assert cause is not None, f"no alert in {name}"
    assert (cause.alert.kind, cause.alert.op_type) == (kind, op_type)
    assert cause.frame is not None and cause.frame.is_user
    assert (cause.frame.path, cause.frame.line) == (dump.program, dump.bug_line)
    assert cause.line_text is not None and cause.line_text.rstrip().endswith("# BUG")
    # The inputs of the root-cause op held no NaN or infinity.
    assert cause.inputs and all(s is None or not s.is_alert for _, s in cause.inputs)
    if kind == "graph":
        assert cause.op is not None
        assert cause.op.op_type == op_type and present(present(cause.trace).summary).is_alert


def test_while_loop_bug_is_in_the_loop_body_at_its_first_bad_iteration(tf_dumps):
    dump = tf_dumps["while_sqrt"]
    assert dump.returncode == 0, dump.stderr[-2000:]
    opened = reader.open_run(dump.logdir)
    cause = opened.root_cause()
    assert cause is not None
    assert cause.op is not None
    assert cause is not None
    sqrt_traces = opened.traces_of(cause.op.id, 0)
    # 6 -> 4.5 -> 3 -> 1.5 -> 0 ... and 9 -> 7.5 ...: the first NaN is not at iteration 1.
    assert sqrt_traces.size >= 2 and present(cause.trace).index != sqrt_traces[0]
    assert "while" in (cause.alert.graph_name or "") or "body" in (cause.alert.graph_name or "")


def test_report_json_on_a_real_dump(tf_dumps):
    dump = tf_dumps["function_log"]
    assert dump.returncode == 0, dump.stderr[-2000:]
    result = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", dump.logdir, "--json"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    first = json.loads(result.stdout)["first_alert"]
    assert first["op_type"] == "Log" and first["graph_name"] == "cross_entropy"
    assert first["source"]["line"] == dump.bug_line
