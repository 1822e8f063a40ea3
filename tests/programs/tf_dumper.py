"""Dump one small program with TensorFlow's own dumper, once per tensor debug mode.

    python tf_dumper.py ROOT [MODE ...]

Writes ``ROOT/<MODE>/`` with `tf.debugging.experimental.enable_dump_debug_info` (no
circular buffer), then reads each dump back with TensorFlow's `DebugDataReader` and
writes what it says to ``ROOT/<MODE>.expected.json``: counts, the first graph trace
and the first execution holding NaN or infinity, stacks and devices, for the tests
that read these dumps without TensorFlow.

The program: eager ops (finite), then a tf.function whose `tf.math.log` of a tensor
holding an exact 0 makes -inf, which `Mul` carries on and `Sub` turns into NaN. The
bug line ends with "# BUG".
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from tensorflow.python.debug.lib import debug_events_reader  # noqa: E402

MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE", "FULL_TENSOR")


def program() -> None:
    """The debugged program: a few eager ops, then two calls of a tf.function."""
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    probs = x - tf.constant([1.0, 0.0, 0.0, 0.0])  # one exact 0

    @tf.function
    def step(p):
        logs = tf.math.log(p)  # BUG
        doubled = logs * 2.0
        spread = doubled - doubled
        return tf.reduce_sum(spread)

    step(probs)
    step(probs + 1.0)


def expected(path: str, mode: str) -> dict:
    """What TensorFlow's own reader says about the dump at ``path``."""
    out: dict = {"mode": mode}
    with debug_events_reader.DebugDataReader(path) as r:
        r.update()
        out["run_id"] = r.tfdbg_run_id()
        out["tf_version"] = r.tensorflow_version()
        executions = r.executions()
        out["executions"] = [e.op_type for e in executions]
        traces = r.graph_execution_traces()
        out["traces"] = [[t.op_name, t.output_slot, t.op_type] for t in traces]
        out["devices"] = sorted(r.device_name_map().values())
        out["source_files"] = [p for _, p in r.source_file_list()]
        out["first_trace_alert"] = None
        health = mode in ("CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH")
        if health:
            for t in traces:
                summary = t.debug_tensor_value
                counts = {
                    "CURT_HEALTH": (1,),
                    "CONCISE_HEALTH": (2, 3, 4),
                    "FULL_HEALTH": (5, 6, 7),
                }[mode]
                flagged = any(summary[i] for i in counts)
                if flagged:
                    out["first_trace_alert"] = [t.op_name, t.output_slot, t.op_type]
                    break
            out["trace_summaries"] = [list(t.debug_tensor_value) for t in traces]
            out["execution_summaries"] = [
                [list(v) if v is not None else None for v in e.debug_tensor_values or ()]
                for e in executions
            ]
        if mode == "FULL_TENSOR":
            for t in traces:
                value = r.graph_execution_trace_to_tensor_value(t)
                if value.dtype.kind == "f" and not bool(tf.reduce_all(tf.math.is_finite(value))):
                    out["first_trace_alert"] = [t.op_name, t.output_slot, t.op_type]
                    break
            out["trace_values"] = [
                r.graph_execution_trace_to_tensor_value(t).tolist() for t in traces
            ]
        if mode == "SHAPE":
            out["trace_summaries"] = [list(t.debug_tensor_value) for t in traces]
        log_ops = [d for d in r.graph_op_digests() if d.op_type == "Log"]
        out["log_op"] = log_ops[0].op_name
        _, frames = r.read_graph_op_creation_stack_trace(log_ops[0])
        out["log_stack"] = [[path, line, func] for path, line, func in frames]
        _, frames = r.read_execution_stack_trace(executions[0])
        out["first_execution_stack"] = [[path, line, func] for path, line, func in frames]
        out["graph_names"] = sorted(g.name or "" for g in r.outermost_graphs())
    return out


def main(root: str, modes: list[str]) -> None:
    for mode in modes:
        path = os.path.join(root, mode)
        tf.debugging.experimental.enable_dump_debug_info(
            path, tensor_debug_mode=mode, circular_buffer_size=-1
        )
        program()
        tf.debugging.experimental.disable_dump_debug_info()
        with open(os.path.join(root, f"{mode}.expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected(path, mode), f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(MODES))
