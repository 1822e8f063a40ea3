"""Dumps written with `instrument.dump.writer.DumpWriter` (no TensorFlow): a small model
whose `Log` op makes the first -inf, and big dumps of any number of traces."""

from __future__ import annotations

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt

FLOAT32 = 1
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
EXPRESSIONS = {6: "model(x)", 7: "tf.nn.softmax(logits)", 8: "tf.math.log(probs)",
               9: "labels * log_probs", 14: "train_step(x, labels)"}
LIBRARY_FILE = "/usr/lib/python3/site-packages/tensorflow/python/ops/math_ops.py"


def health_row(values: np.ndarray) -> list[float]:
    """The FULL_HEALTH summary columns of `values` (dtype float32)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    return [FLOAT32, 1, values.size, np.isneginf(values).sum(), np.isposinf(values).sum(),
            np.isnan(values).sum(), (finite < 0).sum(), (finite == 0).sum(), (finite > 0).sum()]


class NanModelDump:
    """A run of three `train_step` calls; from step 1 on, `Log` yields one -inf.

    Attributes:
        writer: The open `DumpWriter` (call `close()` for a finished run).
        ops: Op ids by name.
    """

    def __init__(self, logdir, *, op_names: dict[str, str] | None = None,
                 flush_interval_s: float | None = None, run_id: str | None = None,
                 source_offset: int = 0) -> None:
        names = {"x": "x", "logits": "logits", "probs": "Softmax", "log": "Log",
                 "mul": "mul", "loss": "Neg"}
        names.update(op_names or {})
        self.names = names
        # Written "on another host": the app cannot check the process, as for a dump
        # copied from a training box (tests of a local process start a real one).
        writer = DumpWriter(logdir, {"run": run_id, "start_time": 1_700_000_000.0,
                                     "host": "gpu",
                                     "tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True,
                                     "argv": ["train_model.py"], "tf_version": "2.21.0",
                                     "python_version": "3.11.7"},
                            circular_buffer_size=-1, flush_interval_s=flush_interval_s)
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
        frames = {line: writer.add_frame(user, line + source_offset, "train_step", span(line))
                  for line in (6, 7, 8, 9)}
        lib_frame = writer.add_frame(library, 120, "log")
        stacks = {line: writer.add_stack([outer, frames[line], lib_frame])
                  for line in (6, 7, 8, 9)}
        self.call_stack = writer.add_stack([outer])
        device = writer.add_device("/job:localhost/replica:0/task:0/device:CPU:0")
        self.device = device
        self.graph = writer.add_graph("train_step", None)
        self.ops: dict[str, int] = {}
        self.trace_points: dict[str, int] = {}
        specs = [  # key, type, inputs, creation line
            ("x", "Placeholder", [], 5), ("logits", "Placeholder", [], 6),
            ("probs", "Softmax", ["logits"], 7), ("log", "Log", ["probs"], 8),
            ("mul", "Mul", ["x", "log"], 9), ("loss", "Neg", ["mul"], 9)]
        for tp, (key, op_type, inputs, line) in enumerate(specs):
            self.ops[key] = writer.add_op(
                graph_id=self.graph, op_type=op_type, op_name=names[key],
                inputs=[f"{names[i]}:0" for i in inputs], num_outputs=1,
                output_dtypes=[FLOAT32], device_id=device,
                stack_id=stacks.get(line), trace_points=[tp])
            self.trace_points[key] = tp
        writer.set_graph_function_name(self.graph, "__inference_train_step_42")
        self.keys = [key for key, *_ in specs]
        self.flush()

    def flush(self) -> None:
        self.writer.flush()

    def add_step(self, step: int) -> None:
        """One eager op, then one call of train_step with its six traces."""
        writer = self.writer
        writer.add_execution(op_type="RandomUniform", graph_id=None, input_ids=[],
                             output_ids=[100 + step], device_ids=[self.device],
                             output_dtypes=[FLOAT32], stack_id=self.call_stack,
                             summaries=[health_row(np.full(10, 0.5))])
        probs = np.full(1000, 0.001)
        if step >= 1:
            probs[3] = 0.0
        log = np.log(probs, where=probs > 0, out=np.full(1000, -np.inf))
        x = np.ones(1000)
        tensors = {"x": x, "logits": np.where(probs > 0, 1.0, 0.0), "probs": probs,
                   "log": log, "mul": x * log, "loss": -(x * log)}
        rows = np.array([health_row(tensors[key]) for key in self.keys])
        tps = np.array([self.trace_points[key] for key in self.keys], dtype=np.int32)
        writer.add_traces(tps, summaries=rows)
        writer.add_execution(op_type="__inference_train_step_42", graph_id=self.graph,
                             input_ids=[100 + step], output_ids=[200 + step],
                             device_ids=[self.device], output_dtypes=[FLOAT32],
                             stack_id=self.call_stack, summaries=[health_row(tensors["loss"])])

    def close(self) -> None:
        self.writer.close()


def write_nan_dump(logdir, *, steps: int = 3, finished: bool = True,
                   op_names: dict[str, str] | None = None,
                   run_id: str | None = None, source_offset: int = 0) -> NanModelDump:
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


def write_big_dump(logdir, num_traces: int, *, alert_every: int = 0,
                   chunk: int = 50_000) -> str:
    """A finished run of `num_traces` FULL_HEALTH traces over 100 ops; returns its id.

    With `alert_every` > 0, every that-many-th trace holds one NaN.
    """
    writer = DumpWriter(logdir, {"tensor_debug_mode": fmt.FULL_HEALTH, "eager_mode": True},
                        circular_buffer_size=-1, flush_interval_s=None)
    user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
    stack = writer.add_stack([writer.add_frame(user, 6, "train_step")])
    graph = writer.add_graph("big_step", None)
    num_ops = 100
    for op in range(num_ops):
        writer.add_op(graph_id=graph, op_type="MatMul" if op % 2 else "Relu",
                      op_name=f"layer_{op}/op", inputs=[f"layer_{op - 1}/op:0"] if op else [],
                      num_outputs=1, output_dtypes=[FLOAT32], device_id=None,
                      stack_id=stack, trace_points=[op])
    row = np.array([FLOAT32, 2, 4096, 0, 0, 0, 1000, 96, 3000], dtype=np.float64)
    written = 0
    while written < num_traces:
        n = min(chunk, num_traces - written)
        tps = (np.arange(written, written + n) % num_ops).astype(np.int32)
        rows = np.tile(row, (n, 1))
        if alert_every:
            bad = (np.arange(written, written + n) % alert_every) == alert_every - 1
            rows[bad, 5] = 1
        writer.add_traces(tps, summaries=rows)
        writer.add_execution(op_type="__inference_big_step_1", graph_id=graph, input_ids=[],
                             output_ids=[], device_ids=[], output_dtypes=[], stack_id=stack)
        written += n
    writer.close()
    return writer.run_id
