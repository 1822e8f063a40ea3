"""Read TensorFlow-written dumps with `reader` while TensorFlow cannot be imported.

    python read_tf_dumps.py ROOT MODE...

Prints one JSON object: per mode, what `reader` sees in ``ROOT/<MODE>`` (the dumps
`tf_dumper.py` wrote), for the tests to compare with what TensorFlow's own reader
said (``ROOT/<MODE>.expected.json``).
"""

from __future__ import annotations

import json
import os
import sys

sys.modules["tensorflow"] = None  # type: ignore[assignment]  # any import of it fails

import reader  # noqa: E402


def op_id_of(trace) -> int:
    assert trace.op_id is not None, trace
    return trace.op_id


def frames(dump, stack_id):
    return [[f.path, f.line, f.function] for f in dump.stack(stack_id)]


def summary_row(summary):
    if summary is None:
        return None
    return {
        k: getattr(summary, k)
        for k in (
            "dtype",
            "rank",
            "size",
            "neg_inf",
            "pos_inf",
            "nan",
            "neg",
            "zero",
            "pos",
            "has_inf_or_nan",
        )
    }


def read(path: str) -> dict:
    runs = reader.list_runs(path)
    dump = reader.open_run(path)
    out: dict = {
        "runs": [[r.run_id, r.host, r.tensor_debug_mode, r.dumper] for r in runs],
        "mode": dump.mode,
        "damage": list(dump.damage),
    }
    executions = dump.executions(0, dump.num_executions)
    out["executions"] = [e.op_type for e in executions]
    out["execution_summaries"] = [[summary_row(s) for s in e.summaries or ()] for e in executions]
    traces = dump.traces(0, dump.num_traces)
    ops = [dump.op(op_id_of(t)) for t in traces]
    out["traces"] = [[op.name, t.slot, op.op_type] for op, t in zip(ops, traces)]
    out["trace_summaries"] = [summary_row(t.summary) for t in traces]
    out["trace_shapes"] = [
        list(t.summary.shape) if t.summary and t.summary.shape is not None else None for t in traces
    ]
    out["trace_steps"] = [t.step for t in traces]
    if dump.mode == "FULL_TENSOR":
        values = [dump.trace_value(t.index) for t in traces]
        out["trace_values"] = [None if v is None else v.tolist() for v in values]
    alerts = dump.alerts()
    out["num_alerts"] = alerts.total
    first = dump.first_alert()
    out["first_alert"] = None if first is None else [first.op_name, first.slot, first.op_type]
    cause = dump.root_cause()
    out["root_cause"] = (
        None
        if cause is None or cause.frame is None
        else {
            "op": cause.op.name if cause.op else None,
            "path": cause.frame.path,
            "line": cause.frame.line,
            "text": cause.line_text,
        }
    )
    log = next(op for g in dump.graphs() for op in dump.graph_ops(g.id) if op.op_type == "Log")
    out["log_stack"] = frames(dump, log.stack_id)
    out["first_execution_stack"] = frames(dump, executions[0].stack_id)
    out["devices"] = sorted(d for d in dump.metadata.devices if d != "?")
    out["tf_version"] = dump.metadata.tf_version
    function_graph = executions[1].graph_id
    assert function_graph is not None
    out["function_graph"] = dump.graph(function_graph).name
    out["steps"] = dump.steps().function
    out["tensorflow_imported"] = (
        "tensorflow" in sys.modules and sys.modules["tensorflow"] is not None
    )
    return out


if __name__ == "__main__":
    root = sys.argv[1]
    print(json.dumps({mode: read(os.path.join(root, mode)) for mode in sys.argv[2:]}))
