"""Whole programs: the example, Keras fit, MirroredStrategy, a TF1 session, a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import reader
from reader import format as fmt
from reader.analysis.diagnosis.diagnosis import diagnose_alert
from reader.values import decode_value
from tests.instrument.conftest import run_program
from tests.instrument.dump_loader import decode_file, load_run, load_single_run, run_dirs
from tests.present import present
from tests.program_runs import PROGRAMS, ROOT, line_of, program_env

EXAMPLE = ROOT / "instrument" / "examples" / "debug_mnist.py"


def first_nonfinite(dump):
    points = dump.trace_point_ops()
    for trace in dump.traces:
        row = dict(zip(fmt.SUMMARY_COLUMNS[dump.run["tensor_debug_mode"]], trace.summary))
        if row["neg_inf"] + row["pos_inf"] + row["nan"] > 0:
            return trace, points[trace.trace_point][0]
    raise AssertionError("no non-finite trace")


def test_example_is_stuck_near_chance(mnist_dump):
    _, stdout = mnist_dump
    accuracies = [
        float(line.rsplit(":", 1)[1])
        for line in stdout.splitlines()
        if line.startswith("Accuracy at step")
    ]
    assert len(accuracies) == 4
    assert all(0.05 < a < 0.15 for a in accuracies[1:])


def test_example_first_nonfinite_trace_is_log_at_the_users_line(mnist_dump):
    dump, _ = mnist_dump
    trace, op = first_nonfinite(dump)
    assert op["type"] == "Log"
    assert dump.executions[trace.step]["op"].startswith("__inference_train_step")
    line = line_of(EXAMPLE, "tf.math.log(probs)")
    frames = dump.stack_frames(op["stack"])
    assert (str(EXAMPLE), line, "cross_entropy") in frames
    (source,) = [f for f in dump.files.values() if f["path"] == str(EXAMPLE)]
    assert "tf.math.log(probs)" in source["lines"][line - 1]


def test_example_trains_with_the_fix():
    stdout = run_program(["-m", "instrument.examples.debug_mnist", "--fix", "--max_steps", "30"])
    last = float(stdout.strip().splitlines()[-1].rsplit(":", 1)[1])
    assert last > 0.6


@pytest.mark.parametrize("jit", ["default", "jit"])
def test_keras_fit_with_a_custom_layer(tmp_path, jit):
    stdout = run_program([str(PROGRAMS / "keras_fit.py"), str(tmp_path), "FULL_HEALTH", jit])
    dump = load_single_run(str(tmp_path))
    assert dump.end is not None
    calls = [e for e in dump.executions if "step_on" in e["op"]]
    assert calls and all(c["graph"] is not None for c in calls)
    line = line_of(PROGRAMS / "keras_fit.py", "# CUSTOM_LAYER_LINE")
    scale_muls = [
        op
        for op in dump.ops_of_type("Mul")
        if (str(PROGRAMS / "keras_fit.py"), line, "call") in dump.stack_frames(op["stack"])
    ]
    assert scale_muls
    points = dump.trace_point_ops()
    traced_ops = {points[t.trace_point][0]["id"] for t in dump.traces}
    # Also when Keras compiles the step with XLA: traced through variables.
    assert traced_ops & {op["id"] for op in scale_muls}
    assert ("xla_traced" in dump.notice_kinds()) == ("JIT True" in stdout)
    assert "xla_untraced" not in dump.notice_kinds()


def test_mirrored_strategy_stacks_keep_the_users_frames(tmp_path):
    stdout = run_program([str(PROGRAMS / "mirrored.py"), str(tmp_path), "FULL_HEALTH"])
    assert "RESULT 3.0" in stdout
    dump = load_single_run(str(tmp_path))
    program = str(PROGRAMS / "mirrored.py")
    replica_line = line_of(program, "# REPLICA_LINE")
    run_line = line_of(program, "strategy.run(replica_step")
    matmuls = dump.ops_of_type("MatMul")
    assert {op["name"] for op in matmuls} == {"MatMul", "replica_1/MatMul"}
    for op in matmuls:
        frames = dump.stack_frames(op["stack"])
        assert (program, replica_line, "replica_step") in frames, op["name"]
        assert (program, run_line, "step") in frames, op["name"]
    points = dump.trace_point_ops()
    assert {points[t.trace_point][0]["name"] for t in dump.traces} >= {"MatMul", "replica_1/MatMul"}


def test_tf1_session_graph(tmp_path):
    stdout = run_program([str(PROGRAMS / "tf1_session.py"), str(tmp_path), "FULL_HEALTH"])
    assert stdout.count("RESULT -inf") == 2
    # stop_on_alert needs eager execution: refused with a clear error.
    assert "STOP_ON_ALERT_REFUSED True" in stdout
    dump = load_single_run(str(tmp_path))
    assert dump.run["eager_mode"] is False
    # Each Session.run is recorded as a run of its graph, named by its fetch.
    assert [e["op"] for e in dump.executions] == ["Session.run(total:0)"] * 2
    assert [e.get("c") for e in dump.executions] == [0, 1]
    (graph,) = dump.graphs.values()
    assert graph["name"] is None and graph["outer"] is None
    (log,) = dump.ops_of_type("Log")
    assert log["inputs"] == ["x:0"]
    (mul,) = dump.ops_of_type("Mul")
    assert mul["inputs"] == ["log:0", "mul/y:0"]  # the original names, not the debugger's
    points = dump.trace_point_ops()
    names = [points[t.trace_point][0]["name"] for t in dump.traces]
    assert names.count("log") == 2 and names.count("x") == 2
    log_trace = next(t for t in dump.traces if points[t.trace_point][0]["name"] == "log")
    assert present(log_trace.summary)[3] == 1.0  # one -inf
    line = line_of(PROGRAMS / "tf1_session.py", "# TF1_LOG_LINE")
    assert (str(PROGRAMS / "tf1_session.py"), line, "<module>") in dump.stack_frames(log["stack"])


@pytest.mark.parametrize("mode", ["CURT_HEALTH", "FULL_HEALTH", "FULL_TENSOR"])
def test_tf1_training_loop_has_steps(tmp_path, mode):
    """A TF1 loop of Session.run calls (train and loss each batch, an error metric every
    third): the training runs are the steps, the NaN fed at the eighth batch is at step
    7, and enabling logs one line naming the logdir, run directory, mode and buffer."""
    stdout = run_program([str(PROGRAMS / "tf1_training.py"), str(tmp_path), mode])
    run_dir = run_dirs(str(tmp_path))[0]
    assert (
        f"tfdbg-tui: recording into {tmp_path} (run directory {run_dir}), "
        f"tensor_debug_mode={mode}, circular_buffer_size=-1 (everything kept)"
    ) in stdout
    with reader.open_run(run_dir) as dump:
        steps = dump.steps()
        assert steps.function == "Session.run(train, loss:0)"
        first = dump.first_alert()
        assert first is not None and steps.first_alert_step == 7
        assert dump.op(present(dump.trace(first.index).op_id)).name in ("features", "labels")
        # A TF1 placeholder is fed, not a function's argument.
        explanation = diagnose_alert(dump, first).explanation
        assert "the value fed (feed_dict) to Placeholder" in explanation, explanation
        assert steps.alert_steps.tolist() == [7, 8, 9]
        runs = [dump.execution(i).op_type for i in range(dump.num_executions)]
        assert runs.count("Session.run(train, loss:0)") == 10
        assert runs.count("Session.run(error:0)") == 4


@pytest.mark.parametrize(
    "mode,buffer_size",
    [
        ("FULL_HEALTH", 20),
        ("FULL_HEALTH", -1),
        # FULL_TENSOR's graph may be waiting on its bounded queue when the kill comes.
        ("FULL_TENSOR", 20),
        ("FULL_TENSOR", -1),
    ],
)
def test_sigkill_leaves_a_dump_that_opens(tmp_path, mode, buffer_size):
    logdir = tmp_path / "logdir"
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(PROGRAMS / "killed.py"), str(logdir), mode, str(buffer_size)],
            cwd=ROOT,
            env=program_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        # Blocks until the program says READY (or gives up after its own deadline).
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == "READY", line + stderr_path.read_text()[-3000:]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    (run,) = run_dirs(str(logdir))
    # The killed writer's space reserve stays; every other file is a segment.
    assert set(os.listdir(run)) - {fmt.RESERVE_FILENAME} == {
        n for n in os.listdir(run) if fmt.parse_segment_filename(n)
    }
    segments = sorted(n for n in os.listdir(run) if fmt.parse_segment_filename(n))
    newest = {present(fmt.parse_segment_filename(n))[0]: n for n in segments}  # sorted: last wins
    for name in segments:
        records, leftover = decode_file(os.path.join(run, name))
        if not records and name in newest.values():
            # Killed between creating a stream's next segment and writing its header
            # (under a circular buffer it rotates often): not yet written.
            assert leftover < 1 << 10, name
            continue
        assert records[0]["k"] == fmt.KIND_HEADER and records[0]["format"] == fmt.FORMAT_NAME
        assert leftover < 1 << 20, name  # at most a cut-short last record
    dump = load_run(run)
    assert dump.end is None
    assert dump.executions and dump.traces
    assert dump.trace_point_ops().keys() >= {t.trace_point for t in dump.traces}
    if mode == "FULL_TENSOR":
        # Every value that reached the disk decodes: a kill cuts records, not values.
        assert all(decode_value(t.value) is not None for t in dump.traces)
    execution_segments = [n for n in os.listdir(run) if n.startswith("executions.")]
    if buffer_size > 0:
        assert 1 <= len(execution_segments) <= 2
        indices = [e["i"] for e in dump.executions]
        assert indices == list(range(indices[0], indices[0] + len(indices)))
    else:
        assert execution_segments == ["executions.000000.tfdbg"]
        assert dump.executions[0]["i"] == 0
