"""A minimal, independent decoder of one run's dump, for the instrumentation tests.

It decodes every record with ``msgpack.Unpacker.feed`` and stops at a truncated tail
(which a killed writer may leave), so the tests check the files themselves rather than
through the reader package.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from reader import format as fmt


def decode_file(path: str) -> tuple[list[dict[str, Any]], int]:
    """All complete records of a segment file, and the number of trailing bytes left over."""
    with open(path, "rb") as source:
        data = source.read()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    records, consumed = [], 0
    while True:
        try:
            record = unpacker.unpack()
        except msgpack.OutOfData:
            break
        consumed = unpacker.tell()
        records.append(record)
    return records, len(data) - consumed


@dataclass
class Trace:
    index: int
    step: int
    trace_point: int
    summary: list[float] | None
    value: dict[str, Any] | None


@dataclass
class Dump:
    """Everything one run directory holds, decoded."""

    path: str
    run: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    devices: dict[int, str] = field(default_factory=dict)
    files: dict[int, dict[str, Any]] = field(default_factory=dict)
    frames: dict[int, dict[str, Any]] = field(default_factory=dict)
    stacks: dict[int, list[int]] = field(default_factory=dict)
    graphs: dict[int, dict[str, Any]] = field(default_factory=dict)
    ops: dict[int, dict[str, Any]] = field(default_factory=dict)
    executions: list[dict[str, Any]] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    truncated_bytes: dict[str, int] = field(default_factory=dict)

    # -- lookups --------------------------------------------------------------------

    def notice_kinds(self) -> list[str]:
        return [n["kind"] for n in self.notices]

    def trace_point_ops(self) -> dict[int, tuple[dict[str, Any], int]]:
        """trace point id -> (op record, output slot)."""
        points = {}
        for op in self.ops.values():
            for slot, tp in enumerate(op["tps"]):
                if tp is not None:
                    points[tp] = (op, slot)
        return points

    def trace_op(self, trace: Trace) -> dict[str, Any]:
        return self.trace_point_ops()[trace.trace_point][0]

    def stack_frames(self, stack_id: int) -> list[tuple[str, int, str]]:
        """(path, line, function) of each frame, outermost first."""
        return [
            (
                self.files[self.frames[f]["file"]]["path"],
                self.frames[f]["line"],
                self.frames[f]["func"],
            )
            for f in self.stacks[stack_id]
        ]

    def graph_named(self, prefix: str) -> list[dict[str, Any]]:
        return [g for g in self.graphs.values() if (g["name"] or "").startswith(prefix)]

    def ops_of_type(self, op_type: str) -> list[dict[str, Any]]:
        return [op for op in self.ops.values() if op["type"] == op_type]


def load_run(path: str) -> Dump:
    """Decode one run directory."""
    dump = Dump(path)
    for name in sorted(os.listdir(path)):
        parsed = fmt.parse_segment_filename(name)
        if parsed is None:
            continue
        records, leftover = decode_file(os.path.join(path, name))
        dump.truncated_bytes[name] = leftover
        if not records and leftover < 1 << 10:
            continue  # a segment created just before a kill: not yet written
        assert records and records[0]["k"] == fmt.KIND_HEADER, name
        assert records[0]["format"] == fmt.FORMAT_NAME
        for record in records[1:]:
            _add(dump, record)
    dump.executions.sort(key=lambda e: e["i"])
    dump.traces.sort(key=lambda t: t.index)
    return dump


def _add(dump: Dump, record: dict[str, Any]) -> None:
    kind = record["k"]
    if kind == fmt.KIND_RUN:
        dump.run = record
    elif kind == fmt.KIND_END:
        dump.end = record
    elif kind == fmt.KIND_NOTICE:
        assert record["level"] in fmt.NOTICE_LEVELS and isinstance(record["message"], str)
        dump.notices.append(record)
    elif kind == fmt.KIND_DEVICE:
        dump.devices[record["id"]] = record["name"]
    elif kind == fmt.KIND_FILE:
        dump.files[record["id"]] = record
    elif kind == fmt.KIND_FRAME:
        dump.frames[record["id"]] = record
    elif kind == fmt.KIND_STACK:
        dump.stacks[record["id"]] = record["frames"]
    elif kind == fmt.KIND_GRAPH:
        if record.get("update"):
            dump.graphs[record["id"]].update(
                {k: v for k, v in record.items() if k not in ("k", "update")}
            )
        else:
            dump.graphs[record["id"]] = record
    elif kind == fmt.KIND_OP:
        dump.ops[record["id"]] = record
    elif kind == fmt.KIND_EXECUTION:
        dump.executions.append(record)
    elif kind == fmt.KIND_EXECUTION_CHUNK:
        dump.executions.extend(_chunk_executions(record))
    elif kind == fmt.KIND_TRACES:
        dump.chunks.append(record)
        n = record["n"]
        tps = np.frombuffer(record["tp"], dtype="<i4")
        assert tps.shape == (n,)
        rows = None
        if "s" in record:
            rows = np.frombuffer(record["s"], dtype="<f8").reshape(n, record["sc"])
        values = record.get("v")
        if "xr" in record:  # traces of several steps: (step, count) runs
            runs = np.frombuffer(record["xr"], dtype="<i8").reshape(-1, 2).tolist()
            steps = [step for step, count in runs for _ in range(count)]
        else:
            steps = [record["x"]] * n
        assert len(steps) == n
        for j in range(n):
            dump.traces.append(
                Trace(
                    index=record["i"] + j,
                    step=steps[j],
                    trace_point=int(tps[j]),
                    summary=None if rows is None else rows[j].tolist(),
                    value=None if values is None else values[j],
                )
            )


def _chunk_executions(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``exec`` records an ``execs`` chunk stands for (docs/format.md section 4)."""
    n = chunk["n"]

    def column(key: str, dtype: str) -> list:
        return np.frombuffer(chunk[key], dtype=dtype).tolist()

    op, graph, stack, t, c = (
        column(k, d)
        for k, d in (("op", "<i4"), ("graph", "<i8"), ("stack", "<i8"), ("t", "<f8"), ("c", "<i8"))
    )
    ni, no = column("ni", "<i4"), column("no", "<i4")
    ins, outs, devs, dtypes = (
        column(k, d) for k, d in (("in", "<i8"), ("out", "<i8"), ("dev", "<i4"), ("dtypes", "<i4"))
    )
    threads = column("th", "<i4") if "th" in chunk else [-1] * n
    rows = (
        np.frombuffer(chunk["s"], dtype="<f8").reshape(-1, chunk["sc"]).tolist()
        if "s" in chunk
        else None
    )
    assert len(op) == n and len(ins) == sum(ni) and len(outs) == sum(no)
    names = {row: listed for row, listed in chunk.get("nm", [])}
    executions = []
    a = o = 0
    for r in range(n):
        record = {
            "k": fmt.KIND_EXECUTION,
            "i": chunk["i"] + r,
            "op": chunk["ops"][op[r]],
            "graph": None if graph[r] < 0 else graph[r],
            "in": ins[a : a + ni[r]],
            "out": outs[o : o + no[r]],
            "dev": devs[o : o + no[r]],
            "dtypes": dtypes[o : o + no[r]],
            "stack": None if stack[r] < 0 else stack[r],
            "t": t[r],
        }
        if c[r] >= 0:
            record["c"] = c[r]
        if threads[r] >= 0:
            record["th"] = chunk["ths"][threads[r]]
        if rows is not None:
            record["s"] = [None if row[0] != row[0] else row for row in rows[o : o + no[r]]]
        if "v" in chunk:
            record["v"] = chunk["v"][o : o + no[r]]
        if r in names:
            record["nm"] = names[r]
        executions.append(record)
        a += ni[r]
        o += no[r]
    return executions


def load_single_run(logdir: str) -> Dump:
    """Decode the only run in a logdir."""
    runs = run_dirs(logdir)
    assert len(runs) == 1, runs
    return load_run(runs[0])


def run_dirs(logdir: str) -> list[str]:
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(logdir, "*", "metadata.*")))
