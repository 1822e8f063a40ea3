"""Columnar ``execs`` chunks (format 2.0): their columns, checked, and one execution
of a chunk as the ``exec`` record it stands for.

The writer gathers the executions between two flushes into one chunk of
little-endian columns (docs/format.md section 4). The index takes a whole chunk with
a few numpy calls (`ExecutionIndex.add_chunk`); showing one execution decodes its
chunk (cached by the loader) and cuts out its row (`execution_record`), so every
consumer of ``exec`` records reads chunked executions unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from reader import format as fmt
from reader import values
from reader.contract import KIND_KEY, ExecRecord, ExecsChunk
from reader.errors import MalformedRecordError
from reader.limits import MAX_ID, is_id, is_int
from reader.summary_rows import stored_magnitudes, stored_rows, stored_width, with_magnitudes

_CHUNK = ExecsChunk
# Column key -> little-endian dtype, for the per-execution and per-output columns.
_PER_EXECUTION = {
    key: _CHUNK.column(key)
    for key in (
        _CHUNK.OP_CODES,
        _CHUNK.GRAPH,
        _CHUNK.STACK,
        _CHUNK.TIME,
        _CHUNK.CALL,
        _CHUNK.NUM_INPUTS,
        _CHUNK.NUM_OUTPUTS,
    )
}
_PER_OUTPUT = {key: _CHUNK.column(key) for key in (_CHUNK.OUTPUTS, _CHUNK.DEVICES, _CHUNK.DTYPES)}


@dataclass(frozen=True)
class ChunkColumns:
    """What the index takes from a chunk: one entry per execution, or per output.

    Attributes:
        first: The index of the chunk's first execution.
        op_types: The chunk's op type table; ``op`` indexes it.
        op, graph: Per execution (graph -1: none).
        out_start: n + 1 positions in ``out``: execution r's outputs are
            ``out[out_start[r]:out_start[r + 1]]``.
        out: Every output tensor id, in execution then slot order.
        summaries: (outputs, width) rows in the index's layout, NaN rows for outputs
            without a summary; None when the mode keeps none.
    """

    first: int
    op_types: list[str]
    op: np.ndarray
    graph: np.ndarray
    out_start: np.ndarray
    out: np.ndarray
    summaries: np.ndarray | None


def _array(record: dict[str, Any], key: str, dtype: str, count: int) -> np.ndarray:
    data = record.get(key)
    if not isinstance(data, bytes) or len(data) != count * np.dtype(dtype).itemsize:
        raise MalformedRecordError(f"an execs chunk whose {key!r} does not hold {count} values")
    return np.frombuffer(data, dtype=dtype)


def chunk_columns(
    record: dict[str, Any], mode: str, width: int, problems: list[str] | None = None
) -> ChunkColumns:
    """The index's columns of an ``execs`` record.

    Args:
        record: The decoded chunk.
        mode: The run's tensor debug mode.
        width: Summary columns per output the index keeps (`summary_width`).
        problems: Where to add why a FULL_TENSOR value could not be decoded.

    Raises:
        MalformedRecordError: A field is missing or its length does not fit ``n``.
    """
    first, n, ops = record.get(_CHUNK.INDEX), record.get(_CHUNK.COUNT), record.get(_CHUNK.OP_TYPES)
    if not (
        is_id(first)
        and is_int(n)
        and n >= 0
        and first + n <= MAX_ID
        and isinstance(ops, list)
        and all(isinstance(op, str) for op in ops)
    ):
        raise MalformedRecordError("an execs chunk with bad i, n or ops")
    per_execution = {key: _array(record, key, dtype, n) for key, dtype in _PER_EXECUTION.items()}
    op = per_execution[_CHUNK.OP_CODES]
    if n and (int(op.min()) < 0 or int(op.max()) >= len(ops)):
        raise MalformedRecordError("an execs chunk whose op codes are not in its table")
    graph, num_outputs = per_execution[_CHUNK.GRAPH], per_execution[_CHUNK.NUM_OUTPUTS]
    num_inputs = per_execution[_CHUNK.NUM_INPUTS]
    if n and min(int(num_outputs.min()), int(num_inputs.min())) < 0:
        raise MalformedRecordError("an execs chunk with a negative input or output count")
    out_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(num_outputs, out=out_start[1:])
    outputs = int(out_start[-1])
    per_output = {key: _array(record, key, dtype, outputs) for key, dtype in _PER_OUTPUT.items()}
    out = per_output[_CHUNK.OUTPUTS]
    _array(record, _CHUNK.INPUTS, _CHUNK.column(_CHUNK.INPUTS), int(num_inputs.sum()))
    summaries = None
    if mode == fmt.FULL_TENSOR:
        stored = record.get(_CHUNK.VALUES)
        if not isinstance(stored, list) or len(stored) != outputs:
            raise MalformedRecordError(f"an execs chunk whose v does not hold {outputs} values")
        summaries = np.full((outputs, width), np.nan)
        slots = [j for j, value in enumerate(stored) if isinstance(value, dict)]
        if slots:
            summaries[slots] = values.summary_rows([stored[j] for j in slots], problems)
    elif width:
        stored = stored_width(mode)
        if record.get(_CHUNK.SUMMARY_WIDTH) != stored:
            raise MalformedRecordError(
                f"an execs chunk whose summaries do not have {stored} columns"
            )
        summaries = with_magnitudes(
            mode,
            _array(
                record, _CHUNK.SUMMARIES, _CHUNK.column(_CHUNK.SUMMARIES), outputs * stored
            ).reshape(outputs, stored),
            stored_magnitudes(record, outputs),
        )
    return ChunkColumns(
        first=int(first),
        op_types=ops,
        op=op,
        graph=graph,
        out_start=out_start,
        out=out,
        summaries=summaries,
    )


def output_devices(record: dict[str, Any], row: int) -> list[int]:
    """The device ids of execution ``row``'s outputs in a chunk the index took (its
    ``dev``, as `execution_record` gives it, without decoding the rest)."""
    counts = np.frombuffer(record[_CHUNK.NUM_OUTPUTS], dtype=_PER_EXECUTION[_CHUNK.NUM_OUTPUTS])
    o0 = int(counts[:row].sum())
    return np.frombuffer(record[_CHUNK.DEVICES], dtype=_PER_OUTPUT[_CHUNK.DEVICES])[
        o0 : o0 + int(counts[row])
    ].tolist()


def execution_record(record: dict[str, Any], row: int) -> dict[str, Any]:
    """Execution ``row`` of a chunk the index took, as the ``exec`` record it stands for
    (docs/format.md section 4, ``exec``)."""
    per = {key: np.frombuffer(record[key], dtype=dtype) for key, dtype in _PER_EXECUTION.items()}
    o0 = int(per[_CHUNK.NUM_OUTPUTS][:row].sum())
    o1 = o0 + int(per[_CHUNK.NUM_OUTPUTS][row])
    i0 = int(per[_CHUNK.NUM_INPUTS][:row].sum())
    i1 = i0 + int(per[_CHUNK.NUM_INPUTS][row])
    # Each per-output column is the same key in both kinds (`out`, `dev`, `dtypes`).
    outputs = {
        key: np.frombuffer(record[key], dtype=dtype)[o0:o1].tolist()
        for key, dtype in _PER_OUTPUT.items()
    }
    graph, stack, call = (int(per[key][row]) for key in (_CHUNK.GRAPH, _CHUNK.STACK, _CHUNK.CALL))
    result: dict[str, Any] = {
        KIND_KEY: ExecRecord.KIND,
        ExecRecord.INDEX: record[_CHUNK.INDEX] + row,
        ExecRecord.OP_TYPE: record[_CHUNK.OP_TYPES][int(per[_CHUNK.OP_CODES][row])],
        ExecRecord.GRAPH: None if graph < 0 else graph,
        ExecRecord.INPUTS: np.frombuffer(record[_CHUNK.INPUTS], dtype=_CHUNK.column(_CHUNK.INPUTS))[
            i0:i1
        ].tolist(),
        **outputs,
        ExecRecord.STACK: None if stack < 0 else stack,
        ExecRecord.TIME: float(per[_CHUNK.TIME][row]),
    }
    if call >= 0:
        result[ExecRecord.CALL] = call
    threads = record.get(_CHUNK.THREAD_NAMES)
    if isinstance(threads, list) and isinstance(record.get(_CHUNK.THREAD), bytes):
        code = int(np.frombuffer(record[_CHUNK.THREAD], dtype=_CHUNK.column(_CHUNK.THREAD))[row])
        if 0 <= code < len(threads):
            result[ExecRecord.THREAD] = threads[code]
    width = record.get(_CHUNK.SUMMARY_WIDTH)
    if is_int(width) and width > 0 and isinstance(record.get(_CHUNK.SUMMARIES), bytes):
        summary_dtype = _CHUNK.column(_CHUNK.SUMMARIES)
        rows = np.frombuffer(record[_CHUNK.SUMMARIES], dtype=summary_dtype).reshape(-1, width)
        magnitudes = stored_magnitudes(record, rows.shape[0])
        rows = rows[o0:o1]
        if magnitudes is not None:  # only FULL_HEALTH chunks store them
            rows = with_magnitudes(fmt.FULL_HEALTH, rows, magnitudes[o0:o1])
        result[ExecRecord.SUMMARIES] = [None if np.isnan(r[0]) else r.tolist() for r in rows]
    stored = record.get(_CHUNK.VALUES)
    if isinstance(stored, list):
        result[ExecRecord.VALUES] = stored[o0:o1]
    names = _names_of_row(record.get(_CHUNK.NAMES), row)
    if names is not None:
        result[ExecRecord.NAMES] = names
    return result


def _names_of_row(entries: Any, row: int) -> list[str] | None:
    """Execution ``row``'s names in a chunk's ``nm`` (``[row, [str, ...]]`` entries,
    format 2.8); None when it has none or the entry is malformed."""
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == row:
            names = entry[1]
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                return names
            return None
    return None


def output_rows(record: dict[str, Any], first: int, stop: int, mode: str, width: int) -> np.ndarray:
    """Summary rows of the outputs of executions ``first..stop-1`` of a chunk the index
    took, in the index's layout (FULL_TENSOR: computed from the values); NaN rows for
    outputs without a summary."""
    counts = np.frombuffer(record[_CHUNK.NUM_OUTPUTS], dtype=_PER_EXECUTION[_CHUNK.NUM_OUTPUTS])
    o0, o1 = int(counts[:first].sum()), int(counts[:stop].sum())
    rows = np.full((o1 - o0, width), np.nan)
    if mode == fmt.FULL_TENSOR:
        stored = record.get(_CHUNK.VALUES) or []
        slots = [j for j in range(o0, o1) if isinstance(stored[j], dict)]
        if slots:
            rows[[j - o0 for j in slots]] = values.summary_rows([stored[j] for j in slots])
    elif width and isinstance(record.get(_CHUNK.SUMMARIES), bytes):
        rows[:] = stored_rows(mode, record[_CHUNK.SUMMARIES], record)[o0:o1]
    return rows
