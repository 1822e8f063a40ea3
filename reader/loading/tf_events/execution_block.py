"""A block of eager executions read by numpy from their bytes (with `wire`), not a
protobuf parse each: spans, output ids and summary rows as columns; the records laid
out otherwise are left to protobuf.

TensorFlow writes one `DebugEvent` record per eager op; decoding each with
`FromString` and turning it into our ``exec`` record costs tens of microseconds. Here
the records of a block are read in lock-step by `reader.loading.tf_events.wire`: the
event's fields, then the `Execution`'s, then its `TensorProto`s', each pass a few
numpy calls over every record. What the index needs comes out as columns (wall
times, spans of the op types, graph ids and code locations, every output's tensor
id, every output's summary row); nothing is decoded per record.

A record is read here only when it is laid out as TensorFlow writes it: an event
holding a wall time and an `Execution`, nothing else, the `Execution`'s fields in
field order, each written once (its repeated ints packed), its summaries `float64`
vectors of the mode's width, one per output or none. Any
other record, however valid, is not ``readable`` and is left to the record-at-a-time
path, which decides what it is (and gives the damage notice when it is none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reader.loading.tf_events import wire
from reader.loading.tf_events.wire import FIXED64, LENGTH_DELIMITED, VARINT, Taken, take

# The fields of an execution record, in the order TensorFlow writes them
# (debug_event.proto, tensor.proto): (number, wire type).
_WALL_TIME, _EXECUTION = (1, FIXED64), (9, LENGTH_DELIMITED)
_OP_TYPE, _NUM_OUTPUTS, _GRAPH_ID = (1, LENGTH_DELIMITED), (2, VARINT), (3, LENGTH_DELIMITED)
_INPUT_IDS, _OUTPUT_IDS, _MODE = (4, LENGTH_DELIMITED), (5, LENGTH_DELIMITED), (6, VARINT)
_PROTOS, _CODE_LOCATION, _DEVICE_IDS = (
    (7, LENGTH_DELIMITED),
    (8, LENGTH_DELIMITED),
    (9, LENGTH_DELIMITED),
)
_DTYPE, _SHAPE, _CONTENT = (1, VARINT), (2, LENGTH_DELIMITED), (4, LENGTH_DELIMITED)
_FLOAT64 = 2  # DataType of the summary vector


@dataclass(frozen=True)
class ExecutionColumns:
    """One block's executions, one entry per record (or per output), in record order.

    Attributes:
        readable: Per record: read whole here; the other records' entries are
            placeholders (empty spans, no outputs).
        times: Wall times.
        op_start, op_stop: Spans of the op types' UTF-8 bytes in the block's data.
        graph_start, graph_stop: Spans of the graph ids (empty: none).
        code_start, code_stop: Spans of the `CodeLocation` messages (empty: none).
        out_start: n + 1 positions in ``out_ids``: record r's outputs are
            ``out_ids[out_start[r]:out_start[r + 1]]``.
        out_ids: Every output tensor id (int64; ids above 2**63 come out negative).
        summaries: Per output, the mode's kept columns of its summary vector
            (`reader.format.TF_SUMMARY_KEPT_COLUMNS`), or None for modes without one.
        has_summary: Per output: a summary was written (the others' rows are NaN).
    """

    readable: np.ndarray
    times: np.ndarray
    op_start: np.ndarray
    op_stop: np.ndarray
    graph_start: np.ndarray
    graph_stop: np.ndarray
    code_start: np.ndarray
    code_stop: np.ndarray
    out_start: np.ndarray
    out_ids: np.ndarray
    summaries: np.ndarray | None
    has_summary: np.ndarray


def scan(
    data: bytes, starts: np.ndarray, lengths: np.ndarray, kept: slice | None
) -> ExecutionColumns:
    """The execution records ``data[starts[r]:starts[r] + lengths[r]]`` (a block that
    `RecordFile.read_new` framed) as columns.

    Args:
        kept: The columns of the summary vector the mode keeps (its width is
            ``kept.stop``); None when the mode has no summary vector.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    n = starts.size
    pos = starts.astype(np.int64)
    end = pos + lengths
    times = np.zeros(n, dtype=np.float64)
    wall_time = take(raw, pos, end, *_WALL_TIME)
    times[wall_time.message] = wire.fixed64(raw, wall_time.start, "<f8")
    execution = take(raw, pos, end, *_EXECUTION)
    readable = np.zeros(n, dtype=bool)
    readable[execution.message] = True
    readable &= pos == end
    pos = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    pos[execution.message], end[execution.message] = execution.start, execution.stop
    op_type = take(raw, pos, end, *_OP_TYPE)
    take(raw, pos, end, *_NUM_OUTPUTS)
    graph_id = take(raw, pos, end, *_GRAPH_ID)
    packed = [take(raw, pos, end, *_INPUT_IDS)]
    outputs = take(raw, pos, end, *_OUTPUT_IDS)
    take(raw, pos, end, *_MODE)  # the run's mode is taken from its first record
    protos = []
    while True:
        proto = take(raw, pos, end, *_PROTOS)
        if not proto.message.size:
            break
        protos.append(proto)
    code_location = take(raw, pos, end, *_CODE_LOCATION)
    packed.append(take(raw, pos, end, *_DEVICE_IDS))
    readable &= pos == end
    for ints in packed:
        torn = (ints.stop > ints.start) & (raw[np.maximum(ints.stop - 1, 0)] >= 0x80)
        readable[ints.message[torn]] = False
    out_start, out_ids = _outputs(raw, outputs, readable)
    summaries, has_summary = None, np.zeros(out_ids.size, dtype=bool)
    if kept is not None:
        summaries, has_summary = _summaries(raw, protos, readable, out_start, kept)
        if not readable[np.repeat(np.arange(n), np.diff(out_start))].all():
            # A record whose summaries could not be read has outputs no longer read.
            out_start, out_ids = _outputs(raw, outputs, readable)
            summaries, has_summary = _summaries(raw, protos, readable, out_start, kept)
    op_start, op_stop = _spans(op_type, readable)
    graph_start, graph_stop = _spans(graph_id, readable)
    code_start, code_stop = _spans(code_location, readable)
    return ExecutionColumns(
        readable=readable,
        times=times,
        op_start=op_start,
        op_stop=op_stop,
        graph_start=graph_start,
        graph_stop=graph_stop,
        code_start=code_start,
        code_stop=code_stop,
        out_start=out_start,
        out_ids=out_ids,
        summaries=summaries,
        has_summary=has_summary,
    )


def _spans(field: Taken, readable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per record: the span of ``field``'s contents; empty (0, 0) when it has none or
    is not ``readable``."""
    begin = np.zeros(readable.size, dtype=np.int64)
    end = np.zeros(readable.size, dtype=np.int64)
    keep = readable[field.message]
    begin[field.message[keep]] = field.start[keep]
    end[field.message[keep]] = field.stop[keep]
    return begin, end


def _outputs(
    raw: np.ndarray, outputs: Taken, readable: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(n + 1 offsets of each record's first output, every output's tensor id); a
    record whose ids are not whole varints is no longer ``readable``."""
    begin, end = _spans(outputs, readable)
    values, out_start, whole = wire.packed_varints(*wire.gather(raw, begin, end))
    readable &= whole
    return out_start, values.view(np.int64)


def _summaries(
    raw: np.ndarray, protos: list[Taken], readable: np.ndarray, out_start: np.ndarray, kept: slice
) -> tuple[np.ndarray, np.ndarray]:
    """Each output's summary row (NaN where none was written) and whether it has one;
    ``readable`` loses the records whose summaries are not one float64 vector of the
    mode's width per output (or none at all)."""
    n = readable.size
    outputs = int(out_start[-1])
    rows = np.full((outputs, kept.stop - kept.start), np.nan)
    has_summary = np.zeros(outputs, dtype=bool)
    if not protos:
        return rows, has_summary
    # The k-th proto of a record (the k-th pass) is its output k's summary.
    owner = np.concatenate([p.message for p in protos])
    slot = np.concatenate([np.full(p.message.size, k) for k, p in enumerate(protos)])
    start = np.concatenate([p.start for p in protos])
    stop = np.concatenate([p.stop for p in protos])
    per_record = np.bincount(owner, minlength=n)
    readable[(per_record > 0) & (per_record != np.diff(out_start))] = False
    pos, count = start.copy(), owner.size
    dtype = np.zeros(count, dtype=np.uint64)
    field = take(raw, pos, stop, *_DTYPE)
    dtype[field.message] = field.value
    take(raw, pos, stop, *_SHAPE)
    content = take(raw, pos, stop, *_CONTENT)
    length = np.zeros(count, dtype=np.int64)
    length[content.message] = content.stop - content.start
    good = (pos == stop) & ((length == 0) | ((length == 8 * kept.stop) & (dtype == _FLOAT64)))
    readable[owner[~good]] = False
    take_row = readable[owner[content.message]] & (length[content.message] > 0)
    if take_row.any():
        proto = content.message[take_row]
        at = out_start[owner[proto]] + slot[proto]
        vectors = sliding_window_view(raw, 8 * kept.stop)[content.start[take_row]]
        rows[at] = vectors.view("<f8")[:, kept]
        has_summary[at] = True
    return rows, has_summary
