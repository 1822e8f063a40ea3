"""Synthetic dumps for tests, written with `instrument.dump.writer.DumpWriter` (no TensorFlow).

Two scenarios, each the fixture of its own assertions: `make_run` and its helpers, a
small run that reader tests extend step by step (chunks, legacy records, a flight
recorder, a writer in another process); and `NanModelDump`, a model whose `Log` makes
the first -inf, with sources, expressions and library frames for the app's panes (the
snapshots are drawn from it), and `write_big_dump` for a million traces.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt

FINITE: list[float] = [1, 1, 4, 0, 0, 0, 1, 1, 2]  # FULL_HEALTH: float32, rank 1, 4 finite elements
NEG_INF: list[float] = [1, 1, 4, 1, 0, 0, 0, 1, 2]  # one -inf
NAN: list[float] = [1, 1, 4, 0, 0, 2, 0, 1, 1]  # two NaN
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


def make_run(
    logdir,
    *,
    mode: str = fmt.FULL_HEALTH,
    circular_buffer_size: int = 0,
    run_id: str | None = None,
    start_time: float | None = None,
    legacy: bool = False,
    task: dict | None = None,
    flush_interval_s: float | None = None,
) -> SyntheticRun:
    """A run with definitions (files, frames, stacks, one graph of three ops), no events.

    ``legacy``: the files say format 1.2, for executions added with
    `add_legacy_execution` (the way a 1.x writer wrote them). ``task``: the `run`
    record's task (a multi-worker job's). ``flush_interval_s``: the writer's
    background flush (None: the test flushes).
    """
    info: dict[str, Any] = {"tensor_debug_mode": mode, "argv": ["train.py"], "tf_version": "2.21.0"}
    if task is not None:
        info["task"] = task
    if run_id:
        info["run"] = run_id
    if start_time is not None:
        info["start_time"] = start_time
    versions = fmt.FORMAT_VERSION, fmt.LOCAL_FORMAT_VERSION
    if legacy:
        fmt.FORMAT_VERSION = fmt.LOCAL_FORMAT_VERSION = (1, 2)
    try:
        w = DumpWriter(
            logdir,
            info,
            circular_buffer_size=circular_buffer_size,
            flush_interval_s=flush_interval_s,
        )
    finally:
        fmt.FORMAT_VERSION, fmt.LOCAL_FORMAT_VERSION = versions
    run = SyntheticRun(writer=w, chunked=not legacy)
    run.device = w.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
    run.user_file = w.add_source_file(
        "/home/me/project/train.py",
        ["import tensorflow as tf", "", "def step(x):", "    y = tf.math.log(x)", "    return -y"],
        library=False,
    )
    run.lib_file = w.add_source_file(
        "/usr/lib/python3/dist-packages/tensorflow/python/ops/math_ops.py",
        None,
        library=True,
        omitted="library",
    )
    user_main = w.add_frame(run.user_file, 5, "<module>")
    user_log = w.add_frame(run.user_file, 4, "step")
    user_neg = w.add_frame(run.user_file, 5, "step")
    lib = w.add_frame(run.lib_file, 321, "log")
    run.user_stack = w.add_stack([user_main, user_log, lib])
    neg_stack = w.add_stack([user_main, user_neg, lib])
    run.lib_stack = w.add_stack([lib])
    run.graph = w.add_graph("step", None, function_name="__inference_step_7")
    run.ops["x"] = w.add_op(
        graph_id=run.graph,
        op_type="Placeholder",
        op_name="x",
        inputs=[],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=run.user_stack,
        trace_points=[0],
    )
    run.ops["Log"] = w.add_op(
        graph_id=run.graph,
        op_type="Log",
        op_name="Log",
        inputs=["x:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=None,
        stack_id=run.user_stack,
        trace_points=[1],
    )
    run.ops["Neg"] = w.add_op(
        graph_id=run.graph,
        op_type="Neg",
        op_name="Neg",
        inputs=["Log:0"],
        num_outputs=1,
        output_dtypes=[1],
        device_id=run.device,
        stack_id=neg_stack,
        trace_points=[2],
    )
    w.flush()
    return run


def add_legacy_execution(
    writer: DumpWriter,
    *,
    op_type,
    graph_id,
    input_ids,
    output_ids,
    device_ids,
    output_dtypes,
    stack_id,
    summaries=None,
) -> int:
    """Append one execution as a writer before format 2.0 did: an ``exec`` record of
    its own (the reader still reads such dumps), into a run made with ``legacy``.
    Returns its index."""
    index = writer.num_executions
    record = {
        "k": fmt.KIND_EXECUTION,
        "i": index,
        "op": op_type,
        "graph": graph_id,
        "in": list(input_ids),
        "out": list(output_ids),
        "dev": list(device_ids),
        "dtypes": list(output_dtypes),
        "stack": stack_id,
        "t": 1.0,
    }
    if summaries is not None:
        record["s"] = [None if r is None else [float(x) for x in r] for r in summaries]
    writer._files[fmt.STREAM_EXECUTIONS].append(record)
    writer.num_executions = index + 1
    return index


def add_step(
    run: SyntheticRun,
    rows: Sequence[Sequence[float]],
    *,
    call: bool = True,
    out_row: Sequence[float] | None = None,
) -> int:
    """One call of the graph: a chunk of traces for tps 0..len(rows)-1, then the call."""
    w = run.writer
    w.add_traces(
        np.arange(len(rows), dtype=np.int32) % 3, summaries=np.array(rows, dtype=np.float64)
    )
    if not call:
        return -1
    base = 1000 + 2 * w.num_executions
    return w.add_execution(
        op_type="__inference_step_7",
        graph_id=run.graph,
        input_ids=[base],
        output_ids=[base + 1],
        device_ids=[run.device],
        output_dtypes=[1],
        stack_id=run.user_stack,
        summaries=[out_row or rows[-1]],
    )


# `write_long_run`: a circular buffer of FLIGHT_BUFFER; the first -inf at step
# FLIGHT_ALERT_STEP of FLIGHT_STEPS.
FLIGHT_BUFFER = 10
FLIGHT_ALERT_STEP = 40
FLIGHT_STEPS = 100


def flight_step(
    run: SyntheticRun, step: int, *, traces: int = 3, alert_step: int = FLIGHT_ALERT_STEP
) -> int:
    """Step ``step``: its traces, then its call (with its call ordinal). Finite before
    ``alert_step``, a Log of 0 (-inf, then NaN) at it, NaN everywhere after."""
    w = run.writer
    rows = (
        [FINITE] * traces
        if step < alert_step
        else [FINITE, NEG_INF] + [NAN] * (traces - 2)
        if step == alert_step
        else [NAN] * traces
    )
    w.add_traces(np.arange(traces, dtype=np.int32) % 3, summaries=np.array(rows, np.float64))
    base = 1000 + 2 * w.num_executions
    return w.add_execution(
        op_type="__inference_step_7",
        graph_id=run.graph,
        input_ids=[base],
        output_ids=[base + 1],
        device_ids=[run.device],
        output_dtypes=[1],
        stack_id=run.user_stack,
        summaries=[rows[-1]],
        call_ordinal=step,
    )


def write_long_run(
    logdir, buffer_size: int = FLIGHT_BUFFER, steps: int = FLIGHT_STEPS
) -> SyntheticRun:
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
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(logdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def stats_row(size, *, pos_inf=0, low=-1.0, high=2.0, mean=0.5, std=1.0):
    """A FULL_STATS row of a rank-1 float32 tensor: all finite but ``pos_inf``."""
    finite = size - pos_inf
    return [
        FLOAT32,
        1,
        size,
        0,
        pos_inf,
        0,
        finite // 2,
        0,
        finite - finite // 2,
        low,
        high,
        mean,
        std,
    ]


def write_exp_overflow_run(logdir, exp_input_max: float) -> str:
    """A FULL_STATS run of x -> Exp in a tf.function, one call: x's largest value is
    ``exp_input_max``; Exp holds one +inf when that is above ln(float32 max) = 88.72.
    Returns the run's path."""
    w = DumpWriter(str(logdir), {"tensor_debug_mode": fmt.FULL_STATS}, flush_interval_s=None)
    source = w.add_source_file(
        "/home/me/model.py",
        ["import tensorflow as tf", "def f(x):", "    return tf.exp(x)"],
        library=False,
    )
    stack = w.add_stack([w.add_frame(source, 3, "f")])
    graph = w.add_graph("f", None, function_name="__inference_f_3")
    w.add_op(
        graph_id=graph,
        op_type="Placeholder",
        op_name="x",
        inputs=[],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=None,
        stack_id=stack,
        trace_points=[0],
    )
    w.add_op(
        graph_id=graph,
        op_type="Exp",
        op_name="Exp",
        inputs=["x:0"],
        num_outputs=1,
        output_dtypes=[FLOAT32],
        device_id=None,
        stack_id=stack,
        trace_points=[1],
    )
    overflow = exp_input_max > 88.72
    rows = np.array(
        [
            stats_row(8, low=-3.0, high=exp_input_max, mean=10.0, std=30.0),
            stats_row(
                8,
                pos_inf=1 if overflow else 0,
                low=0.05,
                high=math.exp(min(exp_input_max, 88.0)),
                mean=1e30,
                std=1e31,
            ),
        ]
    )
    w.add_traces(np.array([0, 1], np.int32), summaries=rows)
    w.add_execution(
        op_type="__inference_f_3",
        graph_id=graph,
        input_ids=[1],
        output_ids=[],
        device_ids=[],
        output_dtypes=[],
        stack_id=stack,
        call_ordinal=0,
    )
    w.close()
    return w.path


# -- a model whose Log makes the first -inf, and big dumps (the app's tests) --------

USER_FILE = "/home/user/project/train_model.py"
USER_SOURCE = [
    "import tensorflow as tf",
    "",
    "",
    "@tf.function",
    "def train_step(x, labels):",
    "    logits = model(x)",
    "    probs = tf.nn.softmax(logits)",
    "    log_probs = tf.math.log(probs)  # -inf where a probability is exactly 0",
    "    loss = -tf.reduce_sum(labels * log_probs)",
    "    return loss",
    "",
    "",
    "for step in range(3):",
    "    train_step(x, labels)",
]
LOG_LINE = 8
# The expression each frame's line runs (its span is written with the frame).
EXPRESSIONS = {
    6: "model(x)",
    7: "tf.nn.softmax(logits)",
    8: "tf.math.log(probs)",
    9: "labels * log_probs",
    14: "train_step(x, labels)",
}
LIBRARY_FILE = "/usr/lib/python3/site-packages/tensorflow/python/ops/math_ops.py"


def health_row(values: np.ndarray) -> list[float]:
    """The FULL_HEALTH summary columns of `values` (dtype float32)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    return [
        FLOAT32,
        1,
        values.size,
        np.isneginf(values).sum(),
        np.isposinf(values).sum(),
        np.isnan(values).sum(),
        (finite < 0).sum(),
        (finite == 0).sum(),
        (finite > 0).sum(),
    ]


class NanModelDump:
    """A run of three `train_step` calls; from step 1 on, `Log` yields one -inf.

    Attributes:
        writer: The open `DumpWriter` (call `close()` for a finished run).
        ops: Op ids by name.
    """

    def __init__(
        self,
        logdir,
        *,
        op_names: dict[str, str] | None = None,
        flush_interval_s: float | None = None,
        run_id: str | None = None,
        source_offset: int = 0,
    ) -> None:
        names = {
            "x": "x",
            "logits": "logits",
            "probs": "Softmax",
            "log": "Log",
            "mul": "mul",
            "loss": "Neg",
        }
        names.update(op_names or {})
        self.names = names
        # Written "on another host": the app cannot check the process, as for a dump
        # copied from a training box (tests of a local process start a real one).
        writer = DumpWriter(
            logdir,
            {
                "run": run_id,
                "start_time": 1_700_000_000.0,
                "host": "gpu",
                "tensor_debug_mode": fmt.FULL_HEALTH,
                "eager_mode": True,
                "argv": ["train_model.py"],
                "tf_version": "2.21.0",
                "python_version": "3.11.7",
            },
            circular_buffer_size=-1,
            flush_interval_s=flush_interval_s,
        )
        self.writer = writer
        # `source_offset` comment lines above the code push every line that far down
        # (a file longer than the pane, so showing a line means scrolling to it).
        padding = [f"# line {number + 1} of the file's header" for number in range(source_offset)]
        user = writer.add_source_file(USER_FILE, padding + USER_SOURCE, library=False)
        library = writer.add_source_file(LIBRARY_FILE, None, library=True, omitted="library")

        def span(line: int) -> tuple[int, int, int]:
            column = USER_SOURCE[line - 1].index(EXPRESSIONS[line])
            return column, line + source_offset, column + len(EXPRESSIONS[line])

        outer = writer.add_frame(user, 14 + source_offset, "<module>", span(14))
        frames = {
            line: writer.add_frame(user, line + source_offset, "train_step", span(line))
            for line in (6, 7, 8, 9)
        }
        lib_frame = writer.add_frame(library, 120, "log")
        stacks = {line: writer.add_stack([outer, frames[line], lib_frame]) for line in (6, 7, 8, 9)}
        self.call_stack = writer.add_stack([outer])
        device = writer.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
        self.device = device
        self.graph = writer.add_graph("train_step", None)
        self.ops: dict[str, int] = {}
        self.trace_points: dict[str, int] = {}
        specs = [  # key, type, inputs, creation line
            ("x", "Placeholder", [], 5),
            ("logits", "Placeholder", [], 6),
            ("probs", "Softmax", ["logits"], 7),
            ("log", "Log", ["probs"], 8),
            ("mul", "Mul", ["x", "log"], 9),
            ("loss", "Neg", ["mul"], 9),
        ]
        for tp, (key, op_type, inputs, line) in enumerate(specs):
            self.ops[key] = writer.add_op(
                graph_id=self.graph,
                op_type=op_type,
                op_name=names[key],
                inputs=[f"{names[i]}:0" for i in inputs],
                num_outputs=1,
                output_dtypes=[FLOAT32],
                device_id=device,
                stack_id=stacks.get(line),
                trace_points=[tp],
            )
            self.trace_points[key] = tp
        writer.set_graph_function_name(self.graph, "__inference_train_step_42")
        self.keys = [key for key, *_ in specs]
        self.flush()

    def flush(self) -> None:
        self.writer.flush()

    def add_step(self, step: int) -> None:
        """One eager op, then one call of train_step with its six traces."""
        writer = self.writer
        writer.add_execution(
            op_type="RandomUniform",
            graph_id=None,
            input_ids=[],
            output_ids=[100 + step],
            device_ids=[self.device],
            output_dtypes=[FLOAT32],
            stack_id=self.call_stack,
            summaries=[health_row(np.full(10, 0.5))],
        )
        probs = np.full(1000, 0.001)
        if step >= 1:
            probs[3] = 0.0
        log = np.log(probs, where=probs > 0, out=np.full(1000, -np.inf))
        x = np.ones(1000)
        tensors = {
            "x": x,
            "logits": np.where(probs > 0, 1.0, 0.0),
            "probs": probs,
            "log": log,
            "mul": x * log,
            "loss": -(x * log),
        }
        rows = np.array([health_row(tensors[key]) for key in self.keys])
        tps = np.array([self.trace_points[key] for key in self.keys], dtype=np.int32)
        writer.add_traces(tps, summaries=rows)
        writer.add_execution(
            op_type="__inference_train_step_42",
            graph_id=self.graph,
            input_ids=[100 + step],
            output_ids=[200 + step],
            device_ids=[self.device],
            output_dtypes=[FLOAT32],
            stack_id=self.call_stack,
            summaries=[health_row(tensors["loss"])],
        )

    def close(self) -> None:
        self.writer.close()


def write_nan_dump(
    logdir,
    *,
    steps: int = 3,
    finished: bool = True,
    op_names: dict[str, str] | None = None,
    run_id: str | None = None,
    source_offset: int = 0,
) -> NanModelDump:
    """Write the NaN model's run into `logdir`; returns it (closed when `finished`).

    `source_offset` moves the user's code that many lines down its file.
    """
    dump = NanModelDump(logdir, op_names=op_names, run_id=run_id, source_offset=source_offset)
    for step in range(steps):
        dump.add_step(step)
    dump.flush()
    if finished:
        dump.close()
    return dump


def write_big_dump(
    logdir,
    num_traces: int,
    *,
    alert_every: int = 0,
    chunk: int = 50_000,
    varied: bool = False,
    paced_s: float = 0.0,
) -> str:
    """A finished run of `num_traces` FULL_HEALTH traces over 100 ops; returns its id.

    With `alert_every` > 0, every that-many-th trace holds one NaN. Every trace has the
    same row, unless `varied`: then each op has its own dtype, rank and size, and each
    trace random counts of negative, zero and positive elements (rows that deflate some
    5x, where real runs' deflate 9-15x and identical ones some 90x). Each `chunk` of
    traces is one step (an execution); with `paced_s` the steps come that many seconds
    apart and the writer flushes by itself, as in a training job.
    """
    writer = DumpWriter(
        logdir,
        {"tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True},
        circular_buffer_size=-1,
        **({} if paced_s else {"flush_interval_s": None}),
    )
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 6, "train_step")])
    graph = writer.add_graph("big_step", None)
    num_ops = 100
    for op in range(num_ops):
        writer.add_op(
            graph_id=graph,
            op_type="MatMul" if op % 2 else "Relu",
            op_name=f"layer_{op}/op",
            inputs=[f"layer_{op - 1}/op:0"] if op else [],
            num_outputs=1,
            output_dtypes=[FLOAT32],
            device_id=None,
            stack_id=stack,
            trace_points=[op],
        )
    row = np.array([FLOAT32, 2, 4096, 0, 0, 0, 1000, 96, 3000], dtype=np.float64)
    rng = np.random.default_rng(7)
    op_rows = np.tile(row, (num_ops, 1))
    if varied:
        op_rows[:, 0] = rng.choice([FLOAT32, 2.0, 19.0], num_ops)
        op_rows[:, 1] = rng.integers(0, 5, num_ops)
        op_rows[:, 2] = 2.0 ** rng.integers(4, 20, num_ops)
    written = 0
    while written < num_traces:
        n = min(chunk, num_traces - written)
        tps = (np.arange(written, written + n) % num_ops).astype(np.int32)
        rows = op_rows[tps]
        if varied:
            size = rows[:, 2]
            rows[:, 6] = np.floor(rng.random(n) * size)
            rows[:, 7] = np.floor(rng.random(n) * (size - rows[:, 6]) * 0.1)
            rows[:, 8] = size - rows[:, 6] - rows[:, 7]
        if alert_every:
            bad = (np.arange(written, written + n) % alert_every) == alert_every - 1
            rows[bad, 5] = 1
        writer.add_traces(tps, summaries=rows)
        writer.add_execution(
            op_type="__inference_big_step_1",
            graph_id=graph,
            input_ids=[],
            output_ids=[],
            device_ids=[],
            output_dtypes=[],
            stack_id=stack,
        )
        written += n
        if paced_s:
            time.sleep(paced_s)
    writer.close()
    return writer.run_id
