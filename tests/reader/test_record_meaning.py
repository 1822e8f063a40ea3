"""What a record means is decided once, in `reader`: function calls, library code, the
value behind an input, a search pattern. The TUI and the report only format it."""

from __future__ import annotations

import pathlib

import numpy as np

from reader import DumpReader
from reader import format as fmt
from reader.analysis.hunt.inputs import eager_inputs, input_trace
from reader.index.definitions import is_library_file
from reader.index.trace_search import compile_search
from tests.synthetic import FINITE, NEG_INF, add_step, make_run
from tfdbg_tui.panes.timeline import execution_letter


def test_every_function_call_prefix_is_a_function_call(tmp_path):
    """A `__forward_` or `__backward_` call whose graph the writer could not name is
    still a function call, in the index and in the decoded record."""
    run = make_run(tmp_path)
    for op_type in ("__inference_step_7", "__forward_step_8", "__backward_step_9", "MatMul"):
        run.writer.add_execution(
            op_type=op_type,
            graph_id=None,
            input_ids=[],
            output_ids=[1],
            device_ids=[run.device],
            output_dtypes=[1],
            stack_id=run.user_stack,
            summaries=[FINITE],
        )
    run.writer.close()
    with DumpReader(run.path) as reader:
        assert reader.execution_function_flags(0, 4).tolist() == [True, True, True, False]
        assert [reader.execution(i).is_function for i in range(4)] == [True, True, True, False]
    assert [fmt.is_function_call(t) for t in ("__forward_f_1", "Forward")] == [True, False]
    assert execution_letter("__backward_step_9") == "s"


def test_the_writers_library_flag_wins_over_the_path(tmp_path):
    """A user's checkout under `/keras/` or `/instrument/` is user code when the writer
    says so: its frame is the innermost user frame, and the root cause's line."""
    run = make_run(tmp_path)
    w = run.writer
    mine = w.add_source_file(
        "/home/me/keras/instrument/train.py", ["y = tf.math.log(x)"], library=False
    )
    stack = w.add_stack(
        [
            w.add_frame(run.user_file, 5, "<module>"),
            w.add_frame(mine, 1, "step"),
            w.add_frame(run.lib_file, 321, "log"),
        ]
    )
    log = w.add_op(
        graph_id=run.graph,
        op_type="Log",
        op_name="mine/Log",
        inputs=["x:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=stack,
        trace_points=[3],
    )
    w.add_traces(np.array([0, 3], np.int32), summaries=np.array([FINITE, NEG_INF], float))
    w.close()
    with DumpReader(run.path) as reader:
        frame = reader.innermost_user_frame(stack)
        assert frame is not None and frame.path == "/home/me/keras/instrument/train.py"
        assert not reader.source_file(mine).is_library
        cause = reader.root_cause()
        assert cause is not None
        assert cause.op is not None
        assert cause is not None
        assert cause.op.id == log and cause.line_text == "y = tf.math.log(x)"
    # Without the flag (a writer that did not record it) the path decides.
    assert is_library_file({}, "/home/me/keras/train.py")
    assert not is_library_file({"library": False}, "/home/me/keras/train.py")
    assert is_library_file({"library": True}, "/home/me/train.py")


def test_a_frame_without_a_function_name_is_a_lambda_not_damage(tmp_path):
    """Earlier writers wrote a nil `func` for a lambda outside any function that
    AutoGraph converted (a `tf.data` map's); a frame without the key is still damage."""
    run = make_run(tmp_path)
    w = run.writer
    lam = w.add_frame(run.user_file, 8, None)  # type: ignore[arg-type]
    stack = w.add_stack([w.add_frame(run.user_file, 5, "<module>"), lam])
    w._append(fmt.STREAM_STACKS, {"k": fmt.KIND_FRAME, "id": 99, "file": run.user_file, "line": 1})
    w.close()
    with DumpReader(run.path) as reader:
        assert [(f.line, f.function) for f in reader.stack(stack)] == [
            (5, "<module>"),
            (8, "<lambda>"),
        ]
        assert len(reader.damage) == 1 and "frame 99 with a bad file" in reader.damage[0]


def test_every_module_of_instrument_is_library_code_by_its_path():
    """The path test knows the `instrument` package's sub-packages: a module moved into
    a new one would otherwise show as the user's code in dumps without the flag."""
    package = pathlib.Path(__file__).resolve().parents[2] / "instrument"
    modules = [p for p in package.rglob("*.py") if "examples" not in p.parts]
    assert len(modules) > 20
    assert [str(p) for p in modules if not is_library_file({}, str(p))] == []
    assert not is_library_file({}, str(package / "examples" / "debug_mnist.py"))
    assert not is_library_file({}, "/home/me/instrument/programs/train.py")


def test_the_value_behind_an_input(tmp_path):
    run = make_run(tmp_path)
    add_step(run, [FINITE, FINITE, FINITE])  # traces 0-2: x, Log, Neg
    add_step(run, [FINITE, NEG_INF, FINITE])  # traces 3-5
    run.writer.close()
    with DumpReader(run.path) as reader:
        x = run.ops["x"]
        assert input_trace(reader, x, 0, 4) == 3  # what Log at trace 4 read
        assert input_trace(reader, x, 0, 0) is None  # nothing before the first trace
        assert reader.nearest_trace_of(x, 0, 4, after=True) == 6 - 3
        call = reader.execution(1)
        (only,) = eager_inputs(reader, call)
        assert only.producer_index is None and only.name == f"tensor {call.input_ids[0]}"


def test_a_search_that_is_not_a_regex_is_searched_as_text(tmp_path):
    regex, note = compile_search("Log(")
    assert regex.search("Log(") and note is not None and "searching for the text" in note
    assert compile_search("Log|Neg")[1] is None
    run = make_run(tmp_path)
    add_step(run, [FINITE, FINITE, FINITE])
    run.writer.close()
    with DumpReader(run.path) as reader:
        assert reader.find_trace("[", 0) is None and reader.find_trace("Lo[g]", 0) == 1
