"""`ExecutionIndex`: the columnar index of eager executions.

No Python object per execution: numpy columns that grow by doubling hold byte
locators and the few small facts the lists and alerts need; full records are decoded
on demand from their locators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from reader import format as fmt
from reader import values
from reader.contract import ExecRecord
from reader.errors import MalformedRecordError
from reader.index.columns import Column, SpannedIndex
from reader.limits import is_id, is_int
from reader.summary_rows import alert_counts, alert_flags, with_magnitudes

if TYPE_CHECKING:
    from reader.index.exec_chunks import ChunkColumns
    from reader.index.exec_scan import ExecScan


class ExecutionIndex(SpannedIndex["ChunkColumns"]):
    """Eager executions: byte locators, op-type codes and flags, one row each.

    Alerting outputs are kept apart, one row per (execution, output slot), since only
    a few executions have them. Output tensor ids sit in one flat column, in execution
    order, for `producer_of`: 8 bytes per output plus 8 per execution, no Python
    object per tensor.
    """

    def __init__(self, mode: str) -> None:
        super().__init__(mode)  # spans: execution index -> row
        self.offset = Column(np.int64)
        self.length = Column(np.int64)
        self.segment = Column(np.int32)
        # The execution's row in its ``execs`` chunk (offset and length locate the
        # chunk); -1 for an ``exec`` record of its own (format 1.2 and before).
        self.chunk_row = Column(np.int32)
        self.op_code = Column(np.int32)
        self.is_function = Column(np.bool_)
        self.is_alert = Column(np.bool_)
        self.out_start = Column(np.int64)  # row in `out_ids` of the execution's slot 0
        self.out_ids = Column(np.int64)  # every output tensor id; -1 for a malformed one
        # TF's eager tensor ids come from one global counter, so the column is sorted
        # in practice and a lookup is a binary search; otherwise it is a linear scan.
        self.out_sorted = True
        self._last_out_id = -1
        self.op_types: list[str] = []
        self._op_codes: dict[str, int] = {}
        self._code_is_function = np.zeros(0, dtype=bool)  # per op code: "__inference_..."
        self.alert_index = Column(np.int64)
        self.alert_slot = Column(np.int32)
        self.alert_counts = Column(np.int64, 3)  # nan, neg_inf, pos_inf; -1 unknown

    @property
    def _per_execution(self) -> tuple[Column, ...]:
        return (
            self.offset,
            self.length,
            self.segment,
            self.chunk_row,
            self.op_code,
            self.is_function,
            self.is_alert,
            self.out_start,
        )

    def __len__(self) -> int:
        return self.offset.size

    def _continue_at(self, index: int, count: int) -> None:
        """Take ``count`` executions from ``index`` on: a jump forward (records not on
        disk) starts a new run of `spans`.

        Raises:
            MalformedRecordError: ``index`` repeats an index already read.
        """
        try:
            self.spans.append(index, count)
        except ValueError as error:
            raise MalformedRecordError(f"exec {error}") from None

    def add(self, record: dict[str, Any], segment: int, start: int, end: int) -> int:
        """Index one ``exec`` record; returns 1 if new, else raises.

        Raises:
            MalformedRecordError: A field has the wrong type.
        """
        index, op_type = record.get(ExecRecord.INDEX), record.get(ExecRecord.OP_TYPE)
        outputs, graph = record.get(ExecRecord.OUTPUTS), record.get(ExecRecord.GRAPH)
        if not (
            is_id(index)
            and isinstance(op_type, str)
            and isinstance(outputs, list)
            and (graph is None or is_int(graph))
        ):
            raise MalformedRecordError("an exec record with bad i, op, out or graph")
        if len(self) and index < self.end:
            raise MalformedRecordError(f"exec {index} repeats an index before {self.end}")
        rows = self._summary_rows(record, self.value_damage)
        alert_slots = []
        if rows is not None:
            flags = alert_flags(self.mode, rows[1])
            if flags.any():
                counts = alert_counts(self.mode, rows[1])
                for j in np.flatnonzero(flags):
                    alert_slots.append((int(rows[0][j]), counts[j]))
        code = self._intern(op_type)
        self.offset.append(start)
        self.length.append(end - start)
        self.segment.append(segment)
        self.chunk_row.append(-1)
        self.op_code.append(code)
        self.is_function.append(graph is not None or fmt.is_function_call(op_type))
        self.is_alert.append(bool(alert_slots))
        self.out_start.append(self.out_ids.size)
        previous = self._last_out_id
        for tensor_id in outputs:
            if not (is_int(tensor_id) and 0 <= tensor_id < 1 << 63):
                tensor_id = -1
            if tensor_id < previous:
                self.out_sorted = False
            self.out_ids.append(tensor_id)
            previous = tensor_id
        self._last_out_id = previous
        for slot, counts in alert_slots:
            self.alert_index.append(index)
            self.alert_slot.append(slot)
            self.alert_counts.append(counts)
        self._continue_at(index, 1)
        return 1

    def reserve_for_bytes(self, new_bytes: int) -> None:
        """Pre-size the per-execution columns for a segment tail of ``new_bytes``.

        A record of the writer's takes well over 64 bytes (its keys alone are 40), so
        this rarely over-counts by much, and untouched reserved pages cost no memory;
        the columns still grow by doubling past it.
        """
        bound = len(self) + new_bytes // 64
        for column in self._per_execution:
            column.reserve(bound)

    def intern_op(self, op_type: bytes) -> int | None:
        """The code of an op type given as UTF-8 bytes; None when not valid UTF-8."""
        try:
            text = op_type.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return self._intern(text)

    def _intern(self, op_type: str) -> int:
        code = self._op_codes.get(op_type)
        if code is None:
            code = self._op_codes[op_type] = len(self.op_types)
            self.op_types.append(op_type)
        return code

    def add_scanned(
        self,
        scan: ExecScan,
        a: int,
        b: int,
        segment: int,
        base: int,
        starts: np.ndarray,
        ends: np.ndarray,
    ) -> int:
        """Index records ``a..b-1`` of a scanned block (`exec_scan`), all ``ok`` and
        numbered consecutively; the same rows as `add` of each would make.

        Raises:
            MalformedRecordError: Record ``a`` repeats an index already read.
        """
        index = int(scan.index[a])
        n = b - a
        self._continue_at(index, n)
        self.offset.extend(base + starts[a:b])
        self.length.extend(ends[a:b] - starts[a:b])
        self.segment.extend(np.full(n, segment, dtype=np.int32))
        self.chunk_row.extend(np.full(n, -1, dtype=np.int32))
        codes = scan.op_code[a:b]
        self.op_code.extend(codes)
        if len(self._code_is_function) < len(self.op_types):
            self._code_is_function = np.array(
                [fmt.is_function_call(t) for t in self.op_types], dtype=bool
            )
        self.is_function.extend(scan.has_graph[a:b] | self._code_is_function[codes])
        lo, hi = np.searchsorted(scan.alert_record, [a, b])
        alerting = np.zeros(n, dtype=bool)
        alerting[scan.alert_record[lo:hi] - a] = True
        self.is_alert.extend(alerting)
        o0, o1 = int(scan.out_start[a]), int(scan.out_start[b])
        self.out_start.extend(scan.out_start[a:b] - o0 + self.out_ids.size)
        ids = scan.out_ids[o0:o1]
        if ids.size:
            if self.out_sorted and (ids[0] < self._last_out_id or bool((ids[1:] < ids[:-1]).any())):
                self.out_sorted = False
            self.out_ids.extend(ids)
            self._last_out_id = int(ids[-1])
        if hi > lo:
            self.alert_index.extend(scan.index[scan.alert_record[lo:hi]])
            self.alert_slot.extend(scan.alert_slot[lo:hi].astype(np.int32))
            self.alert_counts.extend(scan.alert_counts[lo:hi])
        return n

    def add_chunk(self, chunk: ChunkColumns, segment: int, start: int, end: int) -> int:
        """Index the executions of one ``execs`` chunk; returns how many.

        Raises:
            MalformedRecordError: The chunk repeats an index already read.
        """
        n = chunk.op.size
        if not n:
            return 0
        self._check_new(chunk.first)
        codes_of = np.array([self._intern(t) for t in chunk.op_types], dtype=np.int32)
        self._add_rows(
            chunk.first,
            codes_of[chunk.op],
            chunk.graph >= 0,
            np.full(n, start, dtype=np.int64),
            np.full(n, end - start, dtype=np.int64),
            segment,
            np.arange(n, dtype=np.int32),
            chunk.out_start,
            chunk.out,
            chunk.summaries,
            None,
        )
        return n

    def add_records(
        self,
        first: int,
        op_types: list[str],
        op: np.ndarray,
        has_graph: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        out_start: np.ndarray,
        out: np.ndarray,
        summaries: np.ndarray | None,
        has_summary: np.ndarray,
    ) -> int:
        """Index executions ``first..`` that are records of their own (TensorFlow's),
        given as columns: the same rows as `add` of each would make.

        Args:
            first: The index of the first.
            op_types, op: A table of op types, and each execution's position in it.
            has_graph: Per execution: it names a graph.
            starts, ends: Each record's bytes in segment 0.
            out_start, out: n + 1 offsets of each execution's outputs in ``out``, and
                every output's tensor id.
            summaries, has_summary: Per output, its summary row in the index's
                layout, and whether it has one.

        Raises:
            MalformedRecordError: ``first`` repeats an index already read.
        """
        n = op.size
        if not n:
            return 0
        self._check_new(first)
        codes_of = np.array([self._intern(t) for t in op_types], dtype=np.int32)
        self._add_rows(
            first,
            codes_of[op],
            has_graph,
            starts,
            ends - starts,
            0,
            np.full(n, -1, dtype=np.int32),
            out_start,
            out,
            summaries,
            has_summary,
        )
        return n

    def _check_new(self, first: int) -> None:
        if len(self) and first < self.end:
            raise MalformedRecordError(f"execs {first} repeats an index before {self.end}")

    def _add_rows(
        self,
        first: int,
        codes: np.ndarray,
        has_graph: np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        segment: int,
        chunk_rows: np.ndarray,
        out_start: np.ndarray,
        out: np.ndarray,
        summaries: np.ndarray | None,
        has_summary: np.ndarray | None,
    ) -> None:
        """Append executions ``first..`` (`add_chunk`, `add_records`); outputs without a
        summary have NaN rows, or are those not in ``has_summary`` when given."""
        n = codes.size
        self._continue_at(first, n)
        self.offset.extend(offsets)
        self.length.extend(lengths)
        self.segment.extend(np.full(n, segment, dtype=np.int32))
        self.chunk_row.extend(chunk_rows)
        self.op_code.extend(codes)
        if len(self._code_is_function) < len(self.op_types):
            self._code_is_function = np.array(
                [fmt.is_function_call(t) for t in self.op_types], dtype=bool
            )
        self.is_function.extend(has_graph | self._code_is_function[codes])
        alerting = np.zeros(n, dtype=bool)
        if summaries is not None and out.size:
            flags = alert_flags(self.mode, summaries) & (
                ~np.isnan(summaries[:, 0]) if has_summary is None else has_summary
            )
            hits = np.flatnonzero(flags)
            if hits.size:
                record = np.searchsorted(out_start, hits, side="right") - 1
                alerting[record] = True
                self.alert_index.extend(first + record)
                self.alert_slot.extend((hits - out_start[record]).astype(np.int32))
                self.alert_counts.extend(alert_counts(self.mode, summaries[hits]))
        self.is_alert.extend(alerting)
        self.out_start.extend(out_start[:-1] + self.out_ids.size)
        ids = np.where(out >= 0, out, -1)
        if ids.size:
            if self.out_sorted and (ids[0] < self._last_out_id or bool((ids[1:] < ids[:-1]).any())):
                self.out_sorted = False
            self.out_ids.extend(ids)
            self._last_out_id = int(ids[-1])

    def output_rows(self, record: dict[str, Any]) -> np.ndarray:
        """Summary rows of an ``exec`` record's outputs (the index took it), NaN rows
        for outputs without a summary."""
        outputs = record.get(ExecRecord.OUTPUTS)
        rows = np.full((len(outputs) if isinstance(outputs, list) else 0, self.width), np.nan)
        found = self._summary_rows(record) if self.width else None
        if found is not None:
            slots = [j for j in found[0] if j < rows.shape[0]]
            rows[slots] = found[1][: len(slots)]
        return rows

    def _summary_rows(
        self, record: dict[str, Any], problems: list[str] | None = None
    ) -> tuple[list[int], np.ndarray] | None:
        """(slots, rows) of the outputs that carry a summary, or None; why a value
        could not be decoded is added to ``problems``."""
        if self.mode == fmt.FULL_TENSOR:
            vals = record.get(ExecRecord.VALUES)
            if not isinstance(vals, list):
                return None
            slots = [j for j, v in enumerate(vals) if isinstance(v, dict)]
            return slots, values.summary_rows([vals[j] for j in slots], problems)
        summaries = record.get(ExecRecord.SUMMARIES)
        if self.width == 0 or not isinstance(summaries, list):
            return None
        slots = [j for j, s in enumerate(summaries) if s is not None]
        if not slots:
            return None
        try:
            rows = np.array([summaries[j] for j in slots], dtype=np.float64).reshape(len(slots), -1)
        except (TypeError, ValueError):
            raise MalformedRecordError("an exec record with malformed summaries") from None
        if rows.shape[1] == self.stored_width != self.width:
            # Rows as stored, without magnitudes (`execution_record` appends a chunk's).
            rows = with_magnitudes(self.mode, rows, None)
        elif rows.shape[1] != self.width:
            raise MalformedRecordError(
                f"an exec record whose summaries do not have {self.stored_width} columns"
            )
        return slots, rows

    def alert_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every alerting output, in execution then slot order: (execution index,
        slot, (n, 3) counts of nan, neg_inf, pos_inf, -1 where the mode has none)."""
        return (
            self.alert_index.view.astype(np.int64),
            self.alert_slot.view.astype(np.int64),
            self.alert_counts.view.reshape(-1, 3),
        )

    def producer_of(self, tensor_id: int, before: int | None = None) -> tuple[int, int] | None:
        """(execution index, output slot) of the latest execution that output
        ``tensor_id``, among those below ``before`` (all when None); None if none."""
        if tensor_id < 0 or not self.out_ids.size:
            return None
        rows = self.out_ids.size
        if before is not None:
            end = self.spans.rows_below(before)
            if end <= 0:
                return None
            if end < len(self):
                rows = int(self.out_start.buffer[end])
        ids = self.out_ids.view[:rows]
        if self.out_sorted:
            row = int(np.searchsorted(ids, tensor_id, side="right")) - 1
            if row < 0 or ids[row] != tensor_id:
                return None
        else:
            hits = np.flatnonzero(ids == tensor_id)
            if not hits.size:
                return None
            row = int(hits[-1])
        execution = int(np.searchsorted(self.out_start.view, row, side="right")) - 1
        return self.spans.index_of(execution), row - int(self.out_start.buffer[execution])

    def drop_segment(self, segment: int) -> int:
        """Forget the executions of one segment (it left the disk); returns how many."""
        r0, r1 = (int(r) for r in np.searchsorted(self.segment.view, [segment, segment + 1]))
        if r0 == r1:
            return 0
        first, last = self.spans.index_of(r0), self.spans.index_of(r1 - 1)
        o0 = int(self.out_start.buffer[r0])
        o1 = int(self.out_start.buffer[r1]) if r1 < len(self) else self.out_ids.size
        for column in self._per_execution:
            column.delete(r0, r1)
        self.out_ids.delete(o0, o1)
        self.out_start.view[r0:] -= o1 - o0
        ids = self.out_ids.view
        self.out_sorted = bool(np.all(ids[1:] >= ids[:-1]))
        self._last_out_id = int(ids[-1]) if ids.size else -1
        self.spans.delete_rows(r0, r1)
        a0, a1 = (int(a) for a in np.searchsorted(self.alert_index.view, [first, last + 1]))
        for column in (self.alert_index, self.alert_slot, self.alert_counts):
            column.delete(a0, a1)
        return r1 - r0
