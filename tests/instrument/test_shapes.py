"""Program shapes: XLA, a function traced before enable, preflight notices,
a thread, tf.data, MirroredStrategy and TF1 sessions, each a real program whose root
cause must be the op and the line that made the NaN."""

from __future__ import annotations

import pytest

import reader
from reader import format as fmt
from reader.analysis.diagnosis.diagnosis import diagnose_cause
from tests.instrument.conftest import program_runs, run_program
from tests.present import present
from tests.program_runs import PROGRAMS, line_of

SHAPES = PROGRAMS / "shapes.py"
XLA_MODES = ("FULL_HEALTH", "CURT_HEALTH", "CONCISE_HEALTH", "SHAPE", "NO_TENSOR", "FULL_TENSOR")
PARTS = [f"xla_{mode}" for mode in XLA_MODES] + [
    "before",
    "preflight",
    "thread",
    "data",
    "data_filter",
    "data_interleave",
    "data_generator",
    "mirrored",
    "mirrored_closure",
]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """shapes.py run once with every part: {part: DumpReader}."""
    with program_runs(SHAPES, tmp_path_factory.mktemp("shapes"), PARTS) as dumps:
        yield dumps


def notices(dump, kind):
    return [n for n in dump.notices() if n.kind == kind]


def assert_root_cause(dump, op_type, marker, program=SHAPES):
    cause = dump.root_cause()
    assert cause is not None
    assert (cause.alert.kind, cause.alert.op_type) == ("graph", op_type)
    assert (cause.frame.path, cause.frame.line) == (str(program), line_of(program, marker))
    return cause


def calls(dump):
    return [e for e in dump.executions(0, dump.num_executions) if e.is_function]


def traces_by_op(dump, step):
    """{(graph name, op name): [summary, ...]} of the traces of call ``step``."""
    found: dict[tuple[str, str], list] = {}
    for trace in dump.traces(0, dump.num_traces):
        if trace.step == step:
            op = dump.op(present(trace.op_id))
            found.setdefault((dump.graph(op.graph_id).name, op.name), []).append(trace.summary)
    return found


@pytest.mark.parametrize(
    "mode", [m for m in XLA_MODES if m in fmt.ALERT_MODES and m != "FULL_TENSOR"]
)
def test_xla_root_cause_is_the_log_at_the_users_line(shapes, mode):
    dump = shapes[f"xla_{mode}"]
    xla_call = calls(dump)[0]
    cause = assert_root_cause(dump, "Log", "# XLA_LOG_LINE")
    assert cause.alert.step == xla_call.index  # inside the XLA-compiled call
    assert [n.details for n in notices(dump, fmt.NOTICE_XLA_TRACED)] == [{"function": "body"}]
    assert not notices(dump, fmt.NOTICE_XLA_UNTRACED)


@pytest.mark.parametrize(
    "mode", ["FULL_HEALTH", "CURT_HEALTH", "CONCISE_HEALTH", "SHAPE", "NO_TENSOR"]
)
def test_xla_summaries_are_exactly_debug_numeric_summary_v2s(shapes, mode):
    """The same function with and without XLA on the same input: every tensor the XLA
    call traced has the summary DebugNumericSummaryV2 gave the plain call (a loop body's
    tensors: its last iteration's)."""
    dump = shapes[f"xla_{mode}"]
    xla_call, plain_call = calls(dump)
    xla, plain = traces_by_op(dump, xla_call.index), traces_by_op(dump, plain_call.index)
    top = {key for key in xla if key[0] == "body"}
    assert {"Log", "Sqrt", "mul", "Sum"} <= {name for _, name in top}
    assert any(graph.startswith("while_body") for graph, _ in xla)
    by_name = {}
    for (graph, name), rows in plain.items():
        by_name[(graph if graph == "body" else graph.rsplit("_", 1)[0], name)] = rows
    for (graph, name), rows in xla.items():
        assert len(rows) == 1, (graph, name)
        key = (graph if graph == "body" else graph.rsplit("_", 1)[0], name)
        assert rows[0] == by_name[key][-1], (mode, graph, name)


def test_xla_full_tensor_is_untraced_and_says_so(shapes):
    dump = shapes["xla_FULL_TENSOR"]
    xla_call = calls(dump)[0]
    assert not traces_by_op(dump, xla_call.index)
    (notice,) = notices(dump, fmt.NOTICE_XLA_UNTRACED)
    assert notice.is_warning and notice.details == {"function": "body"}
    assert "FULL_TENSOR" in notice.message


def test_function_traced_before_enable_is_a_warning(shapes):
    dump = shapes["before"]
    (notice,) = notices(dump, fmt.NOTICE_TRACED_BEFORE_ENABLE)
    assert notice.is_warning and notice.details["function"] == "early_step"
    assert calls(dump) and dump.num_traces == 0


def test_preflight_notices(shapes):
    dump = shapes["preflight"]
    kinds = {n.kind: n for n in dump.notices()}
    assert {
        fmt.NOTICE_FUNCTIONS_RUN_EAGERLY,
        fmt.NOTICE_FILTERS,
        fmt.NOTICE_CIRCULAR_BUFFER,
    } <= kinds.keys()
    assert kinds[fmt.NOTICE_FILTERS].details["op_regex"] == "^Log$"
    assert kinds[fmt.NOTICE_CIRCULAR_BUFFER].details == {"size": 100}
    assert not any(n.is_warning for n in dump.notices())


def test_function_first_called_in_another_thread(shapes):
    dump = shapes["thread"]
    assert "THREAD -inf" in shapes["stdout"]
    assert_root_cause(dump, "Log", "# THREAD_LOG_LINE")
    shorts = [f"short-{number}" for number in range(4)]
    assert [call.thread for call in calls(dump)] == ["trainer", *shorts]
    assert dump.metadata.thread == "MainThread"
    assert [n.details for n in notices(dump, fmt.NOTICE_THREAD)] == [
        {"thread": name} for name in ["trainer", *shorts]
    ]


def test_nan_born_in_a_dataset_map_function(shapes):
    dump = shapes["data"]
    # In time order the first alert is the IteratorGetNext that delivered the batch...
    assert dump.alerts().alerts[0].op_type == "IteratorGetNext"
    # ...but the map function computed it first, ahead of its consumer.
    cause = assert_root_cause(dump, "Log", "# DATA_LOG_LINE")
    assert cause.alert.graph_name == "Dataset_map_parse"


@pytest.mark.parametrize(
    "part, op_type, marker, graph",
    [
        ("data_filter", "Log", "# FILTER_LOG_LINE", "Dataset_filter_lambda"),
        ("data_interleave", "Log", "# INTERLEAVE_LOG_LINE", "Dataset_interleave_element"),
    ],
)
def test_nan_born_in_other_dataset_functions(shapes, part, op_type, marker, graph):
    cause = assert_root_cause(shapes[part], op_type, marker)
    assert cause.alert.graph_name == graph


def test_nan_from_a_generator_is_the_python_functions_output(shapes):
    """`from_generator`: the -inf came from Python (np.log(0)); its root cause is the
    py_func that handed it over, at the user's from_generator call."""
    dump = shapes["data_generator"]
    cause = assert_root_cause(dump, "PyFunc", "# GENERATOR_LINE")
    assert cause.alert.graph_name.startswith("Dataset_from_generator")
    diagnosis = diagnose_cause(dump, cause)
    assert diagnosis.pattern == "nonfinite_input" and "Python function" in diagnosis.explanation


def test_mirrored_strategy_replica_line(shapes):
    dump = shapes["mirrored"]
    cause = assert_root_cause(dump, "Log", "# REPLICA_LOG_LINE")
    assert "__autograph_generated" not in cause.frame.path


def test_mirrored_replica_function_defined_inside_the_tf_function(shapes):
    """A closure passed to strategy.run is converted with the tf.function around it:
    its frame maps back through the tracing thread's AutoGraph map to the user's line
    and expression."""
    cause = assert_root_cause(shapes["mirrored_closure"], "Log", "# CLOSURE_LOG_LINE")
    assert "__autograph_generated" not in cause.frame.path
    assert cause.line_text[cause.frame.column : cause.frame.end_column] == "tf.math.log(x)"


@pytest.mark.parametrize("order", ["enable_first", "disable_first fallback"])
def test_tf1_session_with_a_while_loop_in_either_order(tmp_path, order):
    program = PROGRAMS / "tf1_orders.py"
    stdout = run_program([str(program), str(tmp_path), *order.split()])
    assert stdout.count("RESULT -inf") == 2
    with reader.open_run(tmp_path) as dump:
        assert dump.finished and dump.num_traces > 0
        assert_root_cause(dump, "Log", "# TF1_LOG_LINE", program)
        traced = {dump.op(present(t.op_id)).name for t in dump.traces(0, dump.num_traces)}
        assert "while_body" in {
            present(dump.graph(dump.op(present(t.op_id)).graph_id).name).rsplit("_", 1)[0]
            for t in dump.traces(0, dump.num_traces)
            if dump.graph(dump.op(present(t.op_id)).graph_id).name
        }
        kinds = [n.kind for n in dump.notices()]
        if "fallback" in order:
            assert "x" not in traced and fmt.NOTICE_TF1_UNTRACED in kinds
        else:
            assert "x" in traced and fmt.NOTICE_TF1_UNTRACED not in kinds
