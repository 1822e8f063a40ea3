"""Eager code, tf.function, nesting, while/cond, XLA, low precision, tf.data: every mode."""

from __future__ import annotations

import math
import os
import re

import pytest

import instrument
import reader
from reader import format as fmt
from reader.values import decode_value
from tests.instrument.conftest import ALL_MODES
from tests.instrument.dump_loader import Dump
from tests.present import present
from tests.program_runs import PROGRAMS, line_of

WHILE_ITERATIONS = 3
HEALTH = fmt.HEALTH_MODES


def call_traces(
    dump: Dump, function_prefix: str, occurrence: int = 0
) -> list[tuple[str, str, str]]:
    """(graph name, op type, op name) of the traces of one eager call, in order."""
    calls = [e for e in dump.executions if e["op"].startswith(function_prefix)]
    step = calls[occurrence]["i"]
    points = dump.trace_point_ops()
    out = []
    for trace in dump.traces:
        if trace.step == step:
            op, _ = points[trace.trace_point]
            out.append((dump.graphs[op["graph"]]["name"], op["type"], op["name"]))
    return out


@pytest.mark.parametrize("mode", ALL_MODES)
def test_run_metadata_and_clean_end(constructs, mode):
    dump = constructs[mode]
    assert dump.run["tensor_debug_mode"] == mode
    assert dump.run["format_version"] == list(fmt.LOCAL_FORMAT_VERSION)
    assert dump.run["eager_mode"] is True and dump.run["tf_version"]
    assert dump.end is not None
    assert dump.end["num_executions"] == len(dump.executions)
    assert dump.end["num_traces"] == len(dump.traces)
    assert [e["i"] for e in dump.executions] == list(range(len(dump.executions)))
    assert [t.index for t in dump.traces] == list(range(len(dump.traces)))
    assert all(leftover == 0 for leftover in dump.truncated_bytes.values())


@pytest.mark.parametrize("mode", ALL_MODES)
def test_eager_op_is_recorded_with_ids_devices_and_summary(constructs, mode):
    dump = constructs[mode]
    first = dump.executions[0]
    assert first["op"] == "Mul" and first["graph"] is None
    assert len(first["in"]) == 2 and len(first["out"]) == 1
    assert "CPU" in dump.devices[first["dev"][0]]
    assert first["dtypes"] == [1]
    line = line_of(PROGRAMS / "constructs.py", "# eager op: Mul")
    frames = dump.stack_frames(first["stack"])
    assert (str(PROGRAMS / "constructs.py"), line, "program") in frames
    if mode in fmt.HEALTH_MODES + (fmt.SHAPE,):
        row = first["s"][0]
        assert len(row) == len(fmt.SUMMARY_COLUMNS[mode])
        if mode in (fmt.FULL_HEALTH, fmt.FULL_STATS):  # x = [0, -1, 2]
            assert row[:9] == [1.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
        if mode == fmt.FULL_STATS:
            assert row[9:12] == [-1.0, 2.0, pytest.approx(1 / 3)]
            assert row[12] == pytest.approx(math.sqrt(14 / 9))
        if mode == fmt.SHAPE:
            assert row[:4] == [1.0, 1.0, 3.0, 3.0]
    else:
        assert "s" not in first
    if mode == fmt.FULL_TENSOR:
        value = first["v"][0]
        data = present(decode_value(value))
        assert data is not None
        assert data.tolist() == [0.0, -1.0, 2.0]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_function_calls_map_to_their_graphs(constructs, mode):
    dump = constructs[mode]
    calls = [e for e in dump.executions if e["op"].startswith("__inference_outer")]
    assert len(calls) == 2
    graph = dump.graphs[calls[0]["graph"]]
    assert graph["name"] == "outer" and graph["function"] == calls[0]["op"]
    assert graph["outer"] is None
    (inner,) = dump.graph_named("inner")
    assert inner["outer"] == graph["id"]
    bodies = (
        dump.graph_named("while_body")
        + dump.graph_named("while_cond")
        + dump.graph_named("cond_true")
        + dump.graph_named("cond_false")
    )
    assert len(bodies) == 4 and all(b["outer"] == graph["id"] for b in bodies)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_op_creations_have_inputs_dtypes_and_stacks(constructs, mode):
    dump = constructs[mode]
    (log,) = [op for op in dump.ops_of_type("Log") if dump.graphs[op["graph"]]["name"] == "inner"]
    assert log["inputs"] == ["z:0"] and log["num_outputs"] == 1 and log["dtypes"] == [1]
    line = line_of(PROGRAMS / "constructs.py", "# LOG_LINE")
    frames = dump.stack_frames(log["stack"])
    assert any(path.endswith("constructs.py") and number == line for path, number, _ in frames)


@pytest.mark.parametrize("mode", [fmt.NO_TENSOR, fmt.FULL_HEALTH, fmt.FULL_TENSOR])
def test_graph_traces_follow_execution_order(constructs, mode):
    dump = constructs[mode]
    health = [(g, t, n) for g, t, n in call_traces(dump, "__inference_outer", 1)]
    names = [(g, n) for g, _, n in health]
    # Function input first, then every loop iteration, the taken branch only, then the
    # nested function, whose Log comes before its Mul.
    assert names[0] == ("outer", "x")
    body_muls = [
        i for i, (g, n) in enumerate(names) if g.startswith("while_body") and n == "while/mul"
    ]
    assert len(body_muls) == WHILE_ITERATIONS
    taken = [i for i, (g, _) in enumerate(names) if g.startswith("cond_true")]
    assert taken and not any(g.startswith("cond_false") for g, _ in names)
    log = names.index(("inner", "Log"))
    assert (
        body_muls[-1]
        < taken[0]
        < names.index(("outer", "sub"))
        < log
        < names.index(("inner", "mul"))
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_traces_carry_the_step_of_their_call(constructs, mode):
    dump = constructs[mode]
    calls = {e["i"] for e in dump.executions if e["op"].startswith("__inference_outer")}
    steps = {t.step for t in dump.traces if t.step in calls}
    assert steps == calls
    for trace in dump.traces:
        assert 0 <= trace.step <= len(dump.executions)


@pytest.mark.parametrize("mode", HEALTH)
def test_health_summaries_count_the_nonfinite(constructs, mode):
    dump = constructs[mode]
    points = dump.trace_point_ops()
    logs = [t for t in dump.traces if points[t.trace_point][0]["type"] == "Log"]
    assert len(logs) == 2  # one per call of outer
    columns = fmt.SUMMARY_COLUMNS[mode]
    row = dict(zip(columns, logs[0].summary))
    if mode == fmt.CURT_HEALTH:
        assert row["has_inf_or_nan"] == 1.0
    else:  # log([0, 6, 16]) = [-inf, 1.8, 2.8]
        assert (row["size"], row["neg_inf"], row["pos_inf"], row["nan"]) == (3, 1, 0, 0)
    if mode in (fmt.FULL_HEALTH, fmt.FULL_STATS):
        assert (row["dtype"], row["rank"], row["neg"], row["zero"], row["pos"]) == (1, 1, 0, 0, 2)
    if mode == fmt.FULL_STATS:  # of the finite elements: log(6), log(16)
        finite = [math.log(6.0), math.log(16.0)]
        assert (row["min"], row["max"]) == pytest.approx((finite[0], finite[1]), rel=1e-6)
        assert row["mean"] == pytest.approx(sum(finite) / 2, rel=1e-6)
        assert row["std"] == pytest.approx((finite[1] - finite[0]) / 2, rel=1e-6)


def test_concise_rows_agree_with_full_health_for_every_trace(constructs):
    """CONCISE_HEALTH counts equal FULL_HEALTH's for the same traces of the same
    program, batched and per-tensor routes alike."""

    def rows(mode, columns):
        dump = constructs[mode]
        out = []
        for trace in dump.traces:
            op = dump.trace_op(trace)
            row = dict(zip(fmt.SUMMARY_COLUMNS[mode], trace.summary))
            graph = re.sub(r"_\d+$", "", dump.graphs[op["graph"]]["name"] or "")  # cond_true_503
            out.append((graph, op["name"], tuple(row[c] for c in columns)))
        return sorted(out)

    columns = ("size", "neg_inf", "pos_inf", "nan")
    concise = rows(fmt.CONCISE_HEALTH, columns)
    assert concise == rows(fmt.FULL_HEALTH, columns)
    assert any(r[2][1:] != (0, 0, 0) for r in concise)  # the -inf of Log is there


@pytest.mark.parametrize("mode", ALL_MODES)
def test_dtypes_traced_per_mode(constructs, mode):
    dump = constructs[mode]
    (less,) = [
        op
        for op in dump.ops_of_type("Less")
        if dump.graphs[op["graph"]]["name"].startswith("while_cond")
    ]
    int_traced = less["tps"][0] is not None  # a bool output
    assert int_traced == (mode in (fmt.NO_TENSOR, fmt.SHAPE, fmt.FULL_TENSOR))
    dtypes = {
        op["dtypes"][0]
        for op in dump.ops.values()
        if op["tps"]
        and op["tps"][0] is not None
        and dump.graphs[op["graph"]]["name"] == "low_precision"
    }
    assert {19, 14} <= dtypes  # float16 and bfloat16 are traced in every mode
    for op in dump.ops.values():
        assert op["type"] not in ("VarHandleOp",) or op["tps"] == [None]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_xla_function_is_traced_through_variables_except_in_full_tensor(constructs, mode):
    dump = constructs[mode]
    (graph,) = dump.graph_named("compiled")
    ops = [op for op in dump.ops.values() if op["graph"] == graph["id"]]
    assert {"Relu", "Mul"} <= {op["type"] for op in ops}
    (call,) = [e for e in dump.executions if e["op"].startswith("__inference_compiled")]
    assert call["graph"] == graph["id"]
    # The graph captures the dumper's trace blocks and call counter: neither the call's
    # inputs nor the graph's ops (instrument/tracing/own_resources.py).
    assert len(call["in"]) == 1
    assert [op["name"] for op in ops if op["type"] == "Placeholder"] == ["x"]
    points = dump.trace_point_ops()
    traced = {points[t.trace_point][0]["type"] for t in dump.traces if t.step == call["i"]}
    if mode == fmt.FULL_TENSOR:
        assert "Relu" not in traced and "xla_untraced" in dump.notice_kinds()
    else:
        assert {"Relu", "Mul"} <= traced and "xla_traced" in dump.notice_kinds()
    if mode == fmt.FULL_HEALTH:  # relu([0, -1, 2]) * 3: the call's output is summarised
        assert call["s"][0][6:] == [0.0, 2.0, 1.0]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_tf_data_map_function_is_traced(constructs, mode):
    dump = constructs[mode]
    points = dump.trace_point_ops()
    sqrt = [t for t in dump.traces if points[t.trace_point][0]["type"] == "Sqrt"]
    assert len(sqrt) == 4  # one per dataset element
    graph = dump.graphs[points[sqrt[0].trace_point][0]["graph"]]
    # The function's input (the dataset element; Keras' fit on arrays passes the whole
    # arrays at every step) is recorded, not traced: tf.data names the graph so.
    assert graph["name"].startswith("Dataset_map")
    inputs = [
        op for op in dump.ops.values() if op["graph"] == graph["id"] and op["type"] == "Placeholder"
    ]
    assert inputs and all(tp is None for op in inputs for tp in op["tps"])
    if mode == fmt.FULL_TENSOR:
        values = sorted(float(present(decode_value(t.value))) for t in sqrt)  # scalars
        assert values == pytest.approx([math.sqrt(v) for v in range(4)])


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_lambda_outside_any_function_has_frames_the_reader_takes(constructs, mode):
    """AutoGraph names no function for it: its frame takes the generated code's name
    (the writer once wrote none, and the reader skipped the frame as damage)."""
    dump = constructs[mode]
    (mul,) = [
        op
        for op in dump.ops.values()
        if op["type"] == "Mul"
        and dump.graphs[op["graph"]]["name"].startswith("Dataset_map")
        and op["name"].startswith("mul")
    ]
    line = line_of(PROGRAMS / "constructs.py", "# LAMBDA")
    assert (str(PROGRAMS / "constructs.py"), line, "<lambda>") in dump.stack_frames(mul["stack"])
    with reader.open_run(str(constructs["logdir"] / mode)) as run:
        assert run.damage == ()


def test_op_regex_and_dtype_filters(constructs):
    dump = constructs["filtered"]
    points = dump.trace_point_ops()
    assert {points[t.trace_point][0]["type"] for t in dump.traces} == {"Log", "Mul"}
    assert all(points[t.trace_point][0]["dtypes"][0] == 1 for t in dump.traces)
    assert dump.run["op_regex"] == "^(Log|Mul)$" and dump.run["tensor_dtypes"] == ["float32"]


@pytest.mark.parametrize("mode", [fmt.FULL_HEALTH])
def test_definitions_are_written_once(constructs, mode):
    dump = constructs[mode]
    # A frame is a place and the expression running there: two ops made on one line
    # by different calls are two frames.
    locations = [
        (f["file"], f["line"], f["func"], f.get("col"), f.get("end_line"), f.get("end_col"))
        for f in dump.frames.values()
    ]
    assert len(locations) == len(set(locations))
    stacks = [tuple(s) for s in dump.stacks.values()]
    assert len(stacks) == len(set(stacks))
    paths = [f["path"] for f in dump.files.values()]
    assert len(paths) == len(set(paths))


@pytest.mark.parametrize("mode", [fmt.FULL_HEALTH])
def test_library_sources_are_not_snapshotted(constructs, mode):
    dump = constructs[mode]
    by_path = {f["path"]: f for f in dump.files.values()}
    user = by_path[str(PROGRAMS / "constructs.py")]
    assert user["library"] is False and user["lines"][0].startswith('"""Exercise')
    tf_files = [f for p, f in by_path.items() if "/tensorflow/" in p]
    assert tf_files and all(
        f["library"] and f["lines"] is None and f["omitted"] == "library" for f in tf_files
    )
    package = os.path.dirname(instrument.__file__) + os.sep
    # The callback's own frames are left out of stacks.
    assert not [p for p in by_path if p.startswith(package)]


def test_api_is_idempotent_and_rejects_conflicts(constructs):
    api = constructs["api"]
    assert api["idempotent"] is True
    assert "already enabled with different arguments" in api["conflict"]


def test_several_runs_in_one_logdir_stay_apart(constructs):
    from tests.instrument.dump_loader import load_run, run_dirs

    runs = run_dirs(str(constructs["logdir"] / ALL_MODES[0]))
    assert len(runs) == 2
    first, second = (load_run(r) for r in runs)
    assert first.run["run"] != second.run["run"]
    assert second.end is not None and [e["op"] for e in second.executions] == ["AddV2"]
