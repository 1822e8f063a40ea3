"""Executions and graph traces gathered into columnar chunks until a flush packs them
(`execs` and `traces` records, docs/format.md section 4), off the training thread.

A training loop records hundreds of thousands of eager executions and, per
`tf.function` call, a few dozen graph traces; a record for each costs the reader a
Python object per record to index them. The writer gathers what arrives between two
flushes into one `ExecutionChunk` and one `TraceChunk` instead: facts go into plain
lists as they come (cheap on the training thread), and a chunk is packed into
little-endian columns only when its file is flushed, normally by the writer's
background flush thread. A reader indexes a chunk with a few numpy calls.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from reader import format as fmt
from reader.contract import KIND_KEY, ExecsChunk, TracesChunk, ValueMap

# Executions per chunk: bounds a chunk's bytes (a reader decodes a whole chunk to show
# one execution, and caches it) while keeping the per-chunk overhead negligible.
EXECUTION_ROWS = 4096
# Traces per chunk: a reader indexes a chunk without decoding it, and decodes one only
# for a FULL_TENSOR value, so the bound is the chunk's bytes (64k FULL_HEALTH rows are
# 5 MB).
TRACE_ROWS = 1 << 16
# Estimated packed bytes of one execution without values, for the writer's flush
# threshold (ids, device, dtype, summary row).
_ROW_BYTES = 48


class ExecutionChunk:
    """The executions of one ``execs`` record, gathered until the record is packed.

    Args:
        first: The index of the chunk's first execution.
        summary_width: Summary columns per output (`fmt.ROW_COLUMNS`), or 0 (NO_TENSOR,
            FULL_TENSOR).
        magnitudes: The rows' last column is the magnitude, stored apart (`put_summaries`).
    """

    def __init__(self, first: int, summary_width: int, magnitudes: bool = False) -> None:
        self.first = first
        self.width = summary_width
        self.magnitudes = magnitudes
        self.sealed = False  # packed into its record: takes no more executions
        self.estimated_bytes = 0
        self._op_codes: dict[str, int] = {}
        self._thread_codes: dict[str, int] = {}
        self._op: list[int] = []
        self._graph: list[int] = []
        self._stack: list[int] = []
        self._time: list[float] = []
        self._call: list[int] = []
        self._thread: list[int] = []
        self._num_inputs: list[int] = []
        self._inputs: list[int] = []
        self._num_outputs: list[int] = []
        self._outputs: list[int] = []
        self._devices: list[int] = []
        self._dtypes: list[int] = []
        self._summaries: list[float] = []
        self._values: list[Any] | None = None
        self._names: list[list[Any]] = []  # [row, [str, ...]] of the executions that name

    def __len__(self) -> int:
        return len(self._op)

    @property
    def full(self) -> bool:
        return len(self._op) >= EXECUTION_ROWS

    def add(
        self,
        *,
        op_type: str,
        graph_id: int | None,
        input_ids: Sequence[int],
        output_ids: Sequence[int],
        device_ids: Sequence[int],
        output_dtypes: Sequence[int],
        stack_id: int | None,
        summaries: Sequence[Sequence[float] | None] | None,
        values: Sequence[dict[str, Any] | None] | None,
        time_s: float,
        call_ordinal: int | None,
        thread: str | None,
        names: Sequence[str] | None = None,
    ) -> None:
        """Take one execution (the fields of `DumpWriter.add_execution`).

        Per-output lists are fitted to the outputs (cut, or padded with -1, None or a
        NaN row), and a summary row without the mode's columns stands as none: a
        caller's slip costs that detail, never the training program.
        """
        n = len(output_ids)
        device_ids = _fitted(device_ids, n, -1)
        output_dtypes = _fitted(output_dtypes, n, -1)
        if summaries is not None:
            summaries = [self._fitted_row(row) for row in _fitted(summaries, n, None)]
        if values is not None:
            values = _fitted(values, n, None)
        code = self._op_codes.get(op_type)
        if code is None:
            code = self._op_codes[op_type] = len(self._op_codes)
        self._op.append(code)
        self._graph.append(-1 if graph_id is None else int(graph_id))
        self._stack.append(-1 if stack_id is None else int(stack_id))
        self._time.append(float(time_s))
        self._call.append(-1 if call_ordinal is None else int(call_ordinal))
        if thread is None:
            self._thread.append(-1)
        else:
            thread_code = self._thread_codes.get(thread)
            if thread_code is None:
                thread_code = self._thread_codes[thread] = len(self._thread_codes)
            self._thread.append(thread_code)
        if names is not None:
            self._names.append([len(self._op) - 1, [str(name) for name in names]])
        self._num_inputs.append(len(input_ids))
        self._inputs.extend(input_ids)
        self._num_outputs.append(n)
        self._outputs.extend(output_ids)
        self._devices.extend(device_ids)
        self._dtypes.extend(output_dtypes)
        if self.width:
            self._add_summaries(op_type, n, summaries)
        if values is not None or self._values is not None:
            if self._values is None:  # earlier executions of the chunk had no values
                self._values = [None] * (len(self._outputs) - n)
            self._values.extend(values if values is not None else [None] * n)
        self.estimated_bytes += _ROW_BYTES * max(n, 1) + _values_bytes(values)

    def _fitted_row(self, row: Sequence[float] | None) -> Sequence[float] | None:
        """A row of the chunk's width; one without its magnitude gets a NaN one."""
        if row is None:
            return None
        if len(row) == self.width:
            return row
        if self.magnitudes and len(row) == self.width - 1:
            return [*row, math.nan]
        return None

    def _add_summaries(
        self, op_type: str, n: int, summaries: Sequence[Sequence[float] | None] | None
    ) -> None:
        # An output without a summary gets a row of NaN: no mode's first column
        # (has_inf_or_nan, size or dtype) is ever NaN in a real row.
        if summaries is None:
            self._summaries.extend([math.nan] * (self.width * n))
            return
        for row in summaries:
            if row is None:
                self._summaries.extend([math.nan] * self.width)
            else:
                self._summaries.extend(float(x) for x in row)

    def pack_into(self, record: dict[str, Any]) -> None:
        """Fill the chunk's ``execs`` record with its columns; the chunk is sealed.

        Runs at flush (`RecordFile.append`'s ``encode``), so the columns are built off
        the training thread when the background flush writes them.
        """
        self.sealed = True
        kind = ExecsChunk
        record[KIND_KEY] = kind.KIND
        record[kind.INDEX] = self.first
        record[kind.COUNT] = len(self._op)
        record[kind.OP_TYPES] = list(self._op_codes)
        for key, items in (
            (kind.OP_CODES, self._op),
            (kind.GRAPH, self._graph),
            (kind.STACK, self._stack),
            (kind.TIME, self._time),
            (kind.CALL, self._call),
            (kind.NUM_INPUTS, self._num_inputs),
            (kind.INPUTS, self._inputs),
            (kind.NUM_OUTPUTS, self._num_outputs),
            (kind.OUTPUTS, self._outputs),
            (kind.DEVICES, self._devices),
            (kind.DTYPES, self._dtypes),
        ):
            record[key] = _column(items, kind.column(key))
        if self._thread_codes:
            record[kind.THREAD_NAMES] = list(self._thread_codes)
            record[kind.THREAD] = _column(self._thread, kind.column(kind.THREAD))
        if self.width:
            put_summaries(
                record,
                np.array(self._summaries, dtype="<f8").reshape(-1, self.width),
                self.magnitudes,
            )
        if self._values is not None:
            record[kind.VALUES] = self._values
        if self._names:
            record[kind.NAMES] = self._names


def put_summaries(record: dict[str, Any], rows: np.ndarray, magnitudes: bool) -> None:
    """Store summary rows in a chunk's record: ``sc`` and ``s``, and with ``magnitudes``
    the rows' last column (`fmt.MAGNITUDE_COLUMN`) apart, as ``m`` (docs/format.md
    section 5), so that a reader of format 2.0 or 2.1 still reads ``s``. Rows without
    the magnitude (the mode's `fmt.SUMMARY_COLUMNS` only), or none known, are stored
    without ``m``. The keys and columns are the same in ``execs`` and ``traces``."""
    kind = TracesChunk
    if magnitudes and rows.shape[1] in fmt.MAGNITUDE_ROW_WIDTHS:
        if not np.isnan(rows[:, -1]).all():
            record[kind.MAGNITUDES] = np.ascontiguousarray(
                rows[:, -1], dtype=kind.column(kind.MAGNITUDES)
            ).tobytes()
        rows = rows[:, :-1]
    record[kind.SUMMARY_WIDTH] = int(rows.shape[1])
    record[kind.SUMMARIES] = np.ascontiguousarray(rows, dtype=kind.column(kind.SUMMARIES)).tobytes()


@runtime_checkable
class DeferredValues(Protocol):
    """FULL_TENSOR value records made only when iterated: a drained batch's bytes
    (`instrument.tracing.value_batches.PackedValues`), cut into records when their chunk
    is packed. Under a circular buffer most chunks are dropped unpacked."""

    @property
    def nbytes(self) -> int:
        """About the values' raw bytes."""

    def __len__(self) -> int:
        """How many values."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The value records, made now."""


def _values_bytes(values: Sequence[Any] | None) -> int:
    """The raw bytes of FULL_TENSOR value records (an estimate of their packed size)."""
    if values is None:
        return 0
    if isinstance(values, DeferredValues):
        return values.nbytes
    return sum(len(v.get(ValueMap.DATA) or b"") for v in values if isinstance(v, dict))


def _fitted(items: Sequence[Any], n: int, fill: Any) -> list[Any]:
    """``items`` cut or padded with ``fill`` to ``n`` entries."""
    items = list(items[:n])
    return items + [fill] * (n - len(items))


def _column(items: list, dtype: str) -> bytes:
    return np.array(items, dtype=dtype).tobytes()


class TraceChunk:
    """The graph traces of one ``traces`` record, gathered until the record is packed.

    Traces of several steps (eager calls) share a chunk: their steps are kept as runs
    of (step, count) (``xr``), or as ``x`` when the chunk holds one step.

    Args:
        first: The index of the chunk's first trace.
        magnitudes: The rows' last column is the magnitude, stored apart (`put_summaries`).
    """

    def __init__(self, first: int, magnitudes: bool = False) -> None:
        self.first = first
        self.magnitudes = magnitudes
        self.sealed = False
        self.estimated_bytes = 0
        self.count = 0
        self._trace_points: list[np.ndarray] = []
        self._summaries: list[np.ndarray] = []
        # Sequences of value records, one per `add` (`DeferredValues` made into records
        # only when the chunk is packed).
        self._values: list[Sequence[Any]] = []
        self._steps: list[list[int]] = []  # [step, count] runs
        self._layout: tuple[int | None, bool] | None = None  # (summary columns, values)

    @property
    def full(self) -> bool:
        return self.count >= TRACE_ROWS

    def accepts(self, summaries: np.ndarray | None, values: Sequence[Any] | None) -> bool:
        """Whether traces with these summaries and values fit the chunk's layout."""
        layout = (None if summaries is None else int(summaries.shape[1]), values is not None)
        return self._layout is None or self._layout == layout

    def add(
        self,
        trace_points: np.ndarray,
        summaries: np.ndarray | None,
        values: Sequence[Any] | None,
        step: int,
    ) -> None:
        """Take the traces of one `DumpWriter.add_traces` call (already checked)."""
        n = int(trace_points.shape[0])
        self._layout = (None if summaries is None else int(summaries.shape[1]), values is not None)
        self._trace_points.append(trace_points)
        if summaries is not None:
            self._summaries.append(summaries)
        if values is not None and len(values):
            self._values.append(values)
        if self._steps and self._steps[-1][0] == step:
            self._steps[-1][1] += n
        else:
            self._steps.append([step, n])
        self.count += n
        self.estimated_bytes += (
            trace_points.nbytes
            + (0 if summaries is None else summaries.nbytes)
            + _values_bytes(values)
        )

    def pack_into(self, record: dict[str, Any]) -> None:
        """Fill the chunk's ``traces`` record; the chunk is sealed."""
        self.sealed = True
        kind = TracesChunk
        record[KIND_KEY] = kind.KIND
        record[kind.INDEX] = self.first
        record[kind.COUNT] = self.count
        record[kind.TRACE_POINTS] = (
            np.concatenate(self._trace_points).astype(kind.column(kind.TRACE_POINTS)).tobytes()
            if self._trace_points
            else b""
        )
        if len(self._steps) == 1:
            record[kind.STEP] = self._steps[0][0]
        else:
            record[kind.STEP_RUNS] = np.array(
                self._steps, dtype=kind.column(kind.STEP_RUNS)
            ).tobytes()
        if self._summaries:
            put_summaries(record, np.concatenate(self._summaries), self.magnitudes)
        if self._values:
            record[kind.VALUES] = list(itertools.chain.from_iterable(self._values))
