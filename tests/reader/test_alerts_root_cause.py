"""Alerts in true execution order, capped per type; root cause on synthetic graphs."""

from __future__ import annotations

import numpy as np
import pytest

from instrument.dump.value_encoding import tensor_value_record
from reader import DumpReader
from reader import format as fmt
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run

POS_INF = [1, 1, 4, 0, 1, 0, 0, 1, 2]
BOTH_INF = [1, 1, 4, 1, 1, 0, 0, 1, 1]


def _eager(run, row, op_type="Mul", inputs=(), outputs=None):
    w = run.writer
    outputs = list(outputs if outputs is not None else [5000 + w.num_executions])
    return w.add_execution(
        op_type=op_type,
        graph_id=None,
        input_ids=list(inputs),
        output_ids=outputs,
        device_ids=[run.device] * len(outputs),
        output_dtypes=[1] * len(outputs),
        stack_id=run.user_stack,
        summaries=[row] * len(outputs),
    )


def test_alerts_interleave_eager_and_graph_in_execution_order(logdir):
    run = make_run(logdir)
    _eager(run, NAN)  # execution 0
    add_step(run, [FINITE, POS_INF, FINITE], out_row=FINITE)  # traces 0..2 in call 1
    _eager(run, NEG_INF)  # execution 2
    add_step(run, [NEG_INF, FINITE, BOTH_INF], out_row=FINITE)  # traces 3..5 in call 3
    # Traces written late, after execution 4 was recorded, but computed in call 3.
    _eager(run, FINITE)  # execution 4
    run.writer.add_traces(np.array([1], np.int32), summaries=np.array([NAN], float), step=3)
    run.writer.close()
    summary = DumpReader(run.path).alerts()
    order = [(a.kind, a.index) for a in summary.alerts]
    assert order == [
        ("eager", 0),
        ("graph", 1),
        ("eager", 2),
        ("graph", 3),
        ("graph", 5),
        ("graph", 6),
    ]
    assert summary.total == 6
    assert summary.counts == {"NaN": 2, "+inf": 1, "-inf": 2, "±inf": 1}
    log = summary.alerts[1]
    assert (log.op_type, log.op_name, log.slot, log.graph_name, log.step) == (
        "Log",
        "Log",
        0,
        "step",
        1,
    )
    assert (log.nan, log.neg_inf, log.pos_inf) == (0, 0, 1)
    assert log.device == "/job:localhost/replica:0/task:0/device:CPU:0"  # from its call
    assert summary.alerts[0].op_type == "Mul" and summary.alerts[0].op_name is None


def test_alert_cap_per_type_keeps_exact_totals(logdir):
    run = make_run(logdir)
    for _ in range(30):
        add_step(run, [NAN, NEG_INF, FINITE], out_row=FINITE)
    run.writer.close()
    reader = DumpReader(run.path)
    summary = reader.alerts(limit_per_type=5)
    assert summary.total == 60 and summary.counts == {"NaN": 30, "-inf": 30}
    assert len(summary.alerts) == 10
    assert [a.index for a in summary.alerts] == [0, 1, 3, 4, 6, 7, 9, 10, 12, 13]
    assert reader.trace_alert_indices().tolist() == sorted(
        [3 * k for k in range(30)] + [3 * k + 1 for k in range(30)]
    )


def test_curt_health_alerts_have_unknown_counts(logdir):
    run = make_run(logdir, mode=fmt.CURT_HEALTH)
    add_step(run, [[0], [1], [1]], out_row=[1])
    run.writer.close()
    reader = DumpReader(run.path)
    summary = reader.alerts()
    assert summary.counts == {"inf/NaN": 3}
    assert (summary.alerts[0].nan, summary.alerts[0].op_name) == (-1, "Log")
    assert present(reader.trace(1).summary).has_inf_or_nan is True
    assert present(present(reader.root_cause()).op).name == "Log"


def test_root_cause_walks_back_to_the_op_with_finite_inputs(logdir):
    """Traces of independent calls can land out of step order; the walk follows inputs."""
    run = make_run(logdir)
    w = run.writer
    # Call 5's traces (Neg non-finite, its input Log non-finite) were recorded first ...
    w.add_traces(np.array([0, 1], np.int32), summaries=np.array([FINITE, NEG_INF], float), step=5)
    # ... and a later chunk, of step 2, holds only Neg's trace: the first alert in order.
    w.add_traces(np.array([2], np.int32), summaries=np.array([NEG_INF], float), step=2)
    w.close()
    reader = DumpReader(run.path)
    cause = reader.root_cause()
    assert cause is not None
    assert cause.first_alert is not None
    assert cause.first_alert.op_name == "Neg" and cause.first_alert.index == 2
    assert cause.op is not None
    assert cause.op.name == "Log" and cause.alert.index == 1 and cause.alert.step == 5
    assert [ref.name for ref, _ in cause.inputs] == ["x:0"]
    assert cause.inputs[0][1] is not None
    assert cause.inputs[0][1].neg_inf == 0 and cause.input_indices == [0]
    assert cause.frame is not None
    assert (cause.frame.function, cause.frame.line) == ("step", 4)
    assert cause.line_text == "    y = tf.math.log(x)"


def test_root_cause_of_a_graph_op_reports_its_inputs_and_user_line(logdir):
    run = make_run(logdir)
    add_step(run, [FINITE, FINITE, FINITE])
    add_step(run, [FINITE, NEG_INF, NAN])
    run.writer.close()
    cause = DumpReader(run.path).root_cause()
    assert cause is not None
    assert cause.trace is not None
    assert cause.op is not None
    assert (cause.op.name, cause.trace.index, cause.alert.kind) == ("Log", 4, "graph")
    assert cause.execution is not None
    assert cause.execution.index == 1 and cause.execution.is_function
    assert cause.inputs[0][0].op_id == 0 and present(cause.inputs[0][1]).zero == 1
    assert cause.input_indices == [3]  # the Placeholder's trace in the same call
    assert cause.frame is not None
    assert cause.frame.path == "/home/me/project/train.py" and cause.frame.is_user


def test_eager_root_cause_follows_tensor_ids_to_the_producing_execution(logdir):
    run = make_run(logdir)
    _eager(run, FINITE, op_type="ReadVariableOp", outputs=[10])  # 0
    _eager(run, FINITE, op_type="Const", outputs=[11])  # 1
    _eager(run, NEG_INF, op_type="Log", inputs=[11], outputs=[12])  # 2: the root cause
    _eager(run, NAN, op_type="Mul", inputs=[10, 12], outputs=[13])  # 3
    run.writer.close()
    reader = DumpReader(run.path)
    cause = reader.root_cause()
    assert cause is not None
    assert cause.op is None and present(cause.execution).index == 2 and cause.alert.op_type == "Log"
    assert [(ref.name, ref.execution_index) for ref, _ in cause.inputs] == [("Const:0", 1)]
    assert cause.inputs[0][1] is not None
    assert cause.inputs[0][1].neg_inf == 0
    assert cause.frame is not None
    assert cause.frame.line == 4 and present(cause.line_text).strip() == "y = tf.math.log(x)"


def test_no_alerts_no_root_cause(run):
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.flush()
    reader = DumpReader(run.path)
    assert reader.root_cause() is None and reader.alerts().total == 0


def test_full_tensor_values_summaries_and_alerts(logdir):
    run = make_run(logdir, mode=fmt.FULL_TENSOR)
    w = run.writer
    x = np.array([1.0, 0.0, 2.0], np.float32)
    with np.errstate(divide="ignore"):
        log = np.log(x)
    w.add_traces(
        np.array([0, 1], np.int32), values=[tensor_value_record(x), tensor_value_record(log)]
    )
    w.add_execution(
        op_type="Cast",
        graph_id=None,
        input_ids=[],
        output_ids=[3],
        device_ids=[run.device],
        output_dtypes=[3],
        stack_id=None,
        values=[tensor_value_record(np.array([[1, -2]], np.int32))],
    )
    w.close()
    reader = DumpReader(run.path)
    np.testing.assert_array_equal(reader.trace_value(1), log)
    assert present(reader.trace_value(1)).dtype == np.float32
    summary = reader.trace(1).summary
    assert summary is not None
    assert (summary.mode, summary.neg_inf, summary.pos, summary.size) == ("FULL_TENSOR", 1, 1, 3)
    assert reader.trace_alert_indices().tolist() == [1]
    assert present(present(reader.root_cause()).op).name == "Log"
    value = reader.execution_value(0, 0)
    assert value is not None
    assert value.tolist() == [[1, -2]] and value.dtype == np.int32
    assert present(present(reader.execution(0).summaries)[0]).neg == 1
    assert reader.execution_value(0, 1) is None


@pytest.mark.parametrize(
    "pattern,start,forward,expected",
    [
        ("Log", 0, True, 1),
        ("Log", 2, True, 4),
        ("^Ne", 0, True, 2),
        ("Neg|Placeholder", 3, False, 3),
        ("Log", 3, False, 1),
        ("Nope", 0, True, None),
        ("[", 0, True, None),
    ],
)
def test_find_trace(run, pattern, start, forward, expected):
    add_step(run, [FINITE, FINITE, FINITE])
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.flush()
    assert DumpReader(run.path).find_trace(pattern, start, forward) == expected


def test_traces_of_and_nearest_trace(run):
    for _ in range(3):
        add_step(run, [FINITE, FINITE, FINITE])
    run.writer.flush()
    reader = DumpReader(run.path)
    log = run.ops["Log"]
    assert reader.traces_of(log, 0).tolist() == [1, 4, 7]
    assert reader.nearest_trace_of(log, 0, 5) == 4
    assert reader.nearest_trace_of(log, 0, 0) == 1
    assert reader.nearest_trace_of(log, 0, 100) == 7
    assert reader.traces_of(log, 3).size == 0
    assert [t.step for t in reader.traces(2, 5)] == [0, 1, 1]
    assert reader.trace_steps(0, 9).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_execution_with_only_unsummarised_outputs(run):
    """A resource handle's output has no summary (None); an op without outputs has []."""
    w = run.writer
    w.add_execution(
        op_type="VarHandleOp",
        graph_id=None,
        input_ids=[],
        output_ids=[6],
        device_ids=[run.device],
        output_dtypes=[20],
        stack_id=None,
        summaries=[None],
    )
    w.add_execution(
        op_type="AssignVariableOp",
        graph_id=None,
        input_ids=[6, 5],
        output_ids=[],
        device_ids=[],
        output_dtypes=[],
        stack_id=None,
        summaries=[],
    )
    w.flush()
    reader = DumpReader(run.path)
    assert reader.num_executions == 2 and reader.damage == ()
    assert reader.execution(0).summaries == (None,) and not reader.execution(0).is_alert
