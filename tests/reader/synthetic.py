"""Synthetic dumps for tests, written with `instrument.dump.writer.DumpWriter` (no TensorFlow)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt

FINITE = [1, 1, 4, 0, 0, 0, 1, 1, 2]  # FULL_HEALTH: float32, rank 1, 4 finite elements
NEG_INF = [1, 1, 4, 1, 0, 0, 0, 1, 2]  # one -inf
NAN = [1, 1, 4, 0, 0, 2, 0, 1, 1]  # two NaN
FLOAT32 = 1  # TF's DataType enum


@dataclass
class SyntheticRun:
    """A small FULL_HEALTH run: user file, library file, a graph x -> Log -> Neg."""

    writer: DumpWriter
    user_file: int = 0
    lib_file: int = 0
    user_stack: int = 0
    lib_stack: int = 0
    graph: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    device: int = 0
    chunked: bool = True  # executions in ``execs`` chunks (False: 1.2 ``exec`` records)

    @property
    def path(self) -> str:
        return self.writer.path


def segment_path(run_path: str, stream: str, segment: int = 0) -> str:
    return os.path.join(run_path, fmt.segment_filename(stream, segment))


def make_run(logdir, *, mode: str = fmt.FULL_HEALTH, circular_buffer_size: int = 0,
             run_id: str | None = None, start_time: float | None = None,
             legacy: bool = False) -> SyntheticRun:
    """A run with definitions (files, frames, stacks, one graph of three ops), no events.

    ``legacy``: the files say format 1.2, for executions added with
    `add_legacy_execution` (the way a 1.x writer wrote them).
    """
    info = {"tensor_debug_mode": mode, "argv": ["train.py"], "tf_version": "2.21.0"}
    if run_id:
        info["run"] = run_id
    if start_time is not None:
        info["start_time"] = start_time
    version = fmt.FORMAT_VERSION
    fmt.FORMAT_VERSION = (1, 2) if legacy else version
    try:
        w = DumpWriter(logdir, info, circular_buffer_size=circular_buffer_size,
                       flush_interval_s=None)
    finally:
        fmt.FORMAT_VERSION = version
    run = SyntheticRun(writer=w, chunked=not legacy)
    run.device = w.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
    run.user_file = w.add_source_file(
        "/home/me/project/train.py",
        ["import tensorflow as tf", "", "def step(x):", "    y = tf.math.log(x)",
         "    return -y"], library=False)
    run.lib_file = w.add_source_file(
        "/usr/lib/python3/dist-packages/tensorflow/python/ops/math_ops.py", None,
        library=True, omitted="library")
    user_main = w.add_frame(run.user_file, 5, "<module>")
    user_log = w.add_frame(run.user_file, 4, "step")
    user_neg = w.add_frame(run.user_file, 5, "step")
    lib = w.add_frame(run.lib_file, 321, "log")
    run.user_stack = w.add_stack([user_main, user_log, lib])
    neg_stack = w.add_stack([user_main, user_neg, lib])
    run.lib_stack = w.add_stack([lib])
    run.graph = w.add_graph("step", None, function_name="__inference_step_7")
    run.ops["x"] = w.add_op(graph_id=run.graph, op_type="Placeholder", op_name="x",
                            inputs=[], num_outputs=1, output_dtypes=[1], device_id=None,
                            stack_id=run.user_stack, trace_points=[0])
    run.ops["Log"] = w.add_op(graph_id=run.graph, op_type="Log", op_name="Log",
                              inputs=["x:0"], num_outputs=1, output_dtypes=[1],
                              device_id=None, stack_id=run.user_stack, trace_points=[1])
    run.ops["Neg"] = w.add_op(graph_id=run.graph, op_type="Neg", op_name="Neg",
                              inputs=["Log:0"], num_outputs=1, output_dtypes=[1],
                              device_id=run.device, stack_id=neg_stack, trace_points=[2])
    w.flush()
    return run


def add_legacy_execution(writer: DumpWriter, *, op_type, graph_id, input_ids, output_ids,
                         device_ids, output_dtypes, stack_id, summaries=None) -> int:
    """Append one execution as a writer before format 2.0 did: an ``exec`` record of
    its own (the reader still reads such dumps), into a run made with ``legacy``.
    Returns its index."""
    index = writer.num_executions
    record = {"k": fmt.KIND_EXECUTION, "i": index, "op": op_type, "graph": graph_id,
              "in": list(input_ids), "out": list(output_ids), "dev": list(device_ids),
              "dtypes": list(output_dtypes), "stack": stack_id, "t": 1.0}
    if summaries is not None:
        record["s"] = [None if r is None else [float(x) for x in r] for r in summaries]
    writer._files[fmt.STREAM_EXECUTIONS].append(record)
    writer.num_executions = index + 1
    return index


def add_step(run: SyntheticRun, rows: list[list[float]], *, call: bool = True,
             out_row: list[float] | None = None) -> int:
    """One call of the graph: a chunk of traces for tps 0..len(rows)-1, then the call."""
    w = run.writer
    w.add_traces(np.arange(len(rows), dtype=np.int32) % 3,
                 summaries=np.array(rows, dtype=np.float64))
    if not call:
        return -1
    base = 1000 + 2 * w.num_executions
    return w.add_execution(op_type="__inference_step_7", graph_id=run.graph,
                           input_ids=[base], output_ids=[base + 1], device_ids=[run.device],
                           output_dtypes=[1], stack_id=run.user_stack,
                           summaries=[out_row or rows[-1]])


# `write_long_run`: a circular buffer of FLIGHT_BUFFER; the first -inf at step
# FLIGHT_ALERT_STEP of FLIGHT_STEPS.
FLIGHT_BUFFER = 10
FLIGHT_ALERT_STEP = 40
FLIGHT_STEPS = 100


def flight_step(run: SyntheticRun, step: int, *, traces: int = 3,
                alert_step: int = FLIGHT_ALERT_STEP) -> int:
    """Step ``step``: its traces, then its call (with its call ordinal). Finite before
    ``alert_step``, a Log of 0 (-inf, then NaN) at it, NaN everywhere after."""
    w = run.writer
    rows = ([FINITE] * traces if step < alert_step
            else [FINITE, NEG_INF] + [NAN] * (traces - 2) if step == alert_step
            else [NAN] * traces)
    w.add_traces(np.arange(traces, dtype=np.int32) % 3, summaries=np.array(rows, np.float64))
    base = 1000 + 2 * w.num_executions
    return w.add_execution(op_type="__inference_step_7", graph_id=run.graph,
                           input_ids=[base], output_ids=[base + 1], device_ids=[run.device],
                           output_dtypes=[1], stack_id=run.user_stack,
                           summaries=[rows[-1]], call_ordinal=step)


def write_long_run(logdir, buffer_size: int = FLIGHT_BUFFER,
                   steps: int = FLIGHT_STEPS) -> SyntheticRun:
    """A finished run of ``steps`` `flight_step` steps under a circular buffer: its
    dump keeps the first alert's window and the latest steps, with a gap between."""
    run = make_run(logdir, circular_buffer_size=buffer_size)
    for step in range(steps):
        flight_step(run, step)
    run.writer.close()
    return run


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A process that starts a run, writes it to disk and waits to be killed or told to close.
_WRITER = """
import sys
from instrument.dump.writer import DumpWriter
writer = DumpWriter(sys.argv[1], {"tensor_debug_mode": "FULL_HEALTH"}, flush_interval_s=None)
writer.flush()
print(writer.path, flush=True)
if sys.stdin.readline().strip() == "close":
    writer.close()
"""


def start_writer(logdir) -> tuple[subprocess.Popen, str]:
    """A child process with an open run in ``logdir``; returns it and the run's path."""
    path = os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    child = subprocess.Popen([sys.executable, "-c", _WRITER, str(logdir)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    return child, child.stdout.readline().strip()


def stats_row(size, *, pos_inf=0, low=-1.0, high=2.0, mean=0.5, std=1.0):
    """A FULL_STATS row of a rank-1 float32 tensor: all finite but ``pos_inf``."""
    finite = size - pos_inf
    return [FLOAT32, 1, size, 0, pos_inf, 0, finite // 2, 0, finite - finite // 2,
            low, high, mean, std]


def write_exp_overflow_run(logdir, exp_input_max: float) -> str:
    """A FULL_STATS run of x -> Exp in a tf.function, one call: x's largest value is
    ``exp_input_max``; Exp holds one +inf when that is above ln(float32 max) = 88.72.
    Returns the run's path."""
    w = DumpWriter(str(logdir), {"tensor_debug_mode": fmt.FULL_STATS}, flush_interval_s=None)
    source = w.add_source_file("/home/me/model.py", ["import tensorflow as tf",
                                                      "def f(x):", "    return tf.exp(x)"],
                               library=False)
    stack = w.add_stack([w.add_frame(source, 3, "f")])
    graph = w.add_graph("f", None, function_name="__inference_f_3")
    w.add_op(graph_id=graph, op_type="Placeholder", op_name="x", inputs=[], num_outputs=1,
             output_dtypes=[FLOAT32], device_id=None, stack_id=stack, trace_points=[0])
    w.add_op(graph_id=graph, op_type="Exp", op_name="Exp", inputs=["x:0"], num_outputs=1,
             output_dtypes=[FLOAT32], device_id=None, stack_id=stack, trace_points=[1])
    overflow = exp_input_max > 88.72
    rows = np.array([stats_row(8, low=-3.0, high=exp_input_max, mean=10.0, std=30.0),
                     stats_row(8, pos_inf=1 if overflow else 0, low=0.05,
                          high=math.exp(min(exp_input_max, 88.0)), mean=1e30, std=1e31)])
    w.add_traces(np.array([0, 1], np.int32), summaries=rows)
    w.add_execution(op_type="__inference_f_3", graph_id=graph, input_ids=[1], output_ids=[],
                    device_ids=[], output_dtypes=[], stack_id=stack, call_ordinal=0)
    w.close()
    return w.path
