"""`reader.analysis.compare.diff` in columns: keys, alignment and divergence of every graph trace
and eager output of two runs with a few numpy calls, not an object per record.

A graph trace's key is (step, tensor, occurrence, 0): the step it ran in, the tensor
(graph name without TensorFlow's numeric suffix, op name, output slot, interned in a
table both runs share) and how many traces of that tensor came before it in the step.
An eager output's is (step, op type, occurrence, slot): the occurrence counts that
step's executions of the op type (a function call's name without its suffix). Keys are
unique within a run, so aligning two runs is an intersection of their key arrays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reader.summary_rows import alert_flags, row_columns

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

# The key of one trace, as one structured array row.
KEY_DTYPE = np.dtype([("step", "<i8"), ("tensor", "<i8"), ("occurrence", "<i8"), ("slot", "<i8")])


def suffixless(name: str | None) -> str | None:
    """A graph or function name without the numeric suffix TensorFlow adds."""
    return re.sub(r"_\d+$", "", name) if name else name


class TensorTable:
    """Tensors by (graph, op name, slot), or eager op types by (None, op type, -1),
    interned across the runs compared."""

    def __init__(self) -> None:
        self.codes: dict[tuple[str | None, str, int], int] = {}
        self.op_types: list[str] = []
        self.names: list[tuple[str | None, str, int]] = []

    def code(self, graph: str | None, name: str, slot: int, op_type: str) -> int:
        key = (graph, name, slot)
        found = self.codes.get(key)
        if found is None:
            found = self.codes[key] = len(self.names)
            self.names.append(key)
            self.op_types.append(op_type)
        return found


@dataclass(frozen=True)
class TensorKeys:
    """One run's graph traces (only those whose op is known), or eager outputs, on disk,
    keyed.

    Attributes:
        index: Trace indices, ascending; or the execution index of each output.
        position: The call (execution index) each trace ran in; the execution's index.
        key: `KEY_DTYPE` per trace or output.
        rows: Summary rows in the run's mode's layout (NaN rows: no summary), or None
            when the mode records none.
        mode: The run's mode.
    """

    index: np.ndarray
    position: np.ndarray
    key: np.ndarray
    rows: np.ndarray | None
    mode: str


def trace_keys(run: AnalysedRun, table: TensorTable) -> TensorKeys:
    """Key every graph trace of ``run`` on disk."""
    parts = [run.trace_columns(begin, end) for begin, end in run.kept_traces()]
    if parts:
        index = np.concatenate([p[0] for p in parts])
        tps = np.concatenate([p[1] for p in parts])
        position = np.concatenate([p[2] for p in parts])
        rows = None if parts[0][3] is None else np.concatenate([p[3] for p in parts])
    else:
        index = tps = position = np.empty(0, np.int64)
        rows = None
    unique_tps, tp_row = np.unique(tps, return_inverse=True)
    tensor_of_tp = np.full(unique_tps.size, -1, dtype=np.int64)
    for k, tp in enumerate(unique_tps.tolist()):
        op_id, slot = run.trace_point(tp)
        if op_id is None:
            continue
        op = run.op(op_id)
        graph = suffixless(run.graph(op.graph_id).name)
        tensor_of_tp[k] = table.code(graph, op.name, slot, op.op_type)
    tensor = tensor_of_tp[tp_row.ravel()] if tps.size else np.empty(0, np.int64)
    known = tensor >= 0
    index, position, tensor = index[known], position[known], tensor[known]
    if rows is not None:
        rows = rows[known]
    step = run.steps().of_executions(position)
    key = np.zeros(index.size, dtype=KEY_DTYPE)
    key["step"], key["tensor"] = step, tensor
    key["occurrence"] = _occurrences(step, tensor)
    return TensorKeys(
        index=index, position=position, key=key, rows=rows, mode=run.metadata.tensor_debug_mode
    )


def output_keys(run: AnalysedRun, table: TensorTable) -> TensorKeys:
    """Key every eager output of ``run`` on disk."""
    mode = run.metadata.tensor_debug_mode
    parts = []
    for begin, end in run.kept_executions():
        codes, op_types = run.execution_op_codes(begin, end)
        counts, rows = run.execution_outputs(begin, end)
        parts.append(
            (np.arange(begin, begin + codes.size, dtype=np.int64), codes, op_types, counts, rows)
        )
    if not parts:
        return TensorKeys(
            np.empty(0, np.int64), np.empty(0, np.int64), np.zeros(0, dtype=KEY_DTYPE), None, mode
        )
    op_types = parts[-1][2]  # the last table holds every code
    shared = np.array(
        [table.code(None, suffixless(t) or "", -1, suffixless(t) or "") for t in op_types],
        dtype=np.int64,
    )
    execution = np.concatenate([p[0] for p in parts])
    op = shared[np.concatenate([p[1] for p in parts]).astype(np.int64)]
    counts = np.concatenate([p[3] for p in parts])
    step = run.steps().of_executions(execution)
    occurrence = _occurrences(step, op)
    # One entry per output: its execution's fields, and its slot.
    owner = np.repeat(np.arange(execution.size), counts)
    first_output = np.cumsum(counts) - counts
    key = np.zeros(owner.size, dtype=KEY_DTYPE)
    key["step"], key["tensor"] = step[owner], op[owner]
    key["occurrence"] = occurrence[owner]
    key["slot"] = np.arange(owner.size) - first_output[owner]
    summaries = np.concatenate([p[4] for p in parts]) if parts[0][4].shape[1] else None
    return TensorKeys(
        index=execution[owner], position=execution[owner], key=key, rows=summaries, mode=mode
    )


def _occurrences(step: np.ndarray, tensor: np.ndarray) -> np.ndarray:
    """Per trace (in trace order), how many traces of its tensor came before it in its
    step."""
    n = step.size
    if not n:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((np.arange(n), step, tensor))  # by tensor, step, then trace order
    s, t = step[order], tensor[order]
    starts = np.ones(n, dtype=bool)
    starts[1:] = (s[1:] != s[:-1]) | (t[1:] != t[:-1])
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[order] = np.arange(n) - group_start
    return occurrence


def align(a: TensorKeys, b: TensorKeys) -> tuple[np.ndarray, np.ndarray]:
    """Positions (in ``a`` and ``b``) of the aligned pairs, in B's trace order."""
    keys_a, keys_b = _packed(a.key, b.key)
    _, in_a, in_b = np.intersect1d(keys_a, keys_b, assume_unique=True, return_indices=True)
    order = np.argsort(in_b, kind="stable")
    return in_a[order], in_b[order]


def _packed(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both runs' keys as one int64 each when their fields' ranges fit in 63 bits
    (sorting int64 is several times faster than sorting structured rows); otherwise
    the keys themselves."""
    if not a.size or not b.size:
        return a, b
    shift, packed_a, packed_b = 0, np.zeros(a.size, np.int64), np.zeros(b.size, np.int64)
    for name in reversed(KEY_DTYPE.names or ()):
        low = min(int(a[name].min()), int(b[name].min()))
        bits = (max(int(a[name].max()), int(b[name].max())) - low).bit_length()
        if shift + bits > 63:
            return a, b
        packed_a |= (a[name] - low) << shift
        packed_b |= (b[name] - low) << shift
        shift += bits
    return packed_a, packed_b


def compare_rows(
    a: TensorKeys,
    b: TensorKeys,
    in_a: np.ndarray,
    in_b: np.ndarray,
    count_fields: tuple[str, ...],
    stat_fields: tuple[str, ...],
    rtol: float,
    atol: float,
) -> np.ndarray:
    """Per aligned pair, what differs: 0 nothing, 1 finiteness, 2 a count, 3 a statistic
    (as `reader.analysis.compare.diff.differing_fields` decides for one pair)."""
    reason = np.zeros(in_a.size, dtype=np.int8)
    if a.rows is None or b.rows is None or not in_a.size:
        return reason
    rows_a, rows_b = a.rows[in_a], b.rows[in_b]
    # A row of NaN is a tensor without a summary: no comparison (as for a None summary).
    summarised = ~np.isnan(rows_a[:, 0]) & ~np.isnan(rows_b[:, 0])
    columns_a, columns_b = row_columns(a.mode), row_columns(b.mode)

    def beyond(names: tuple[str, ...]) -> np.ndarray:
        found = np.zeros(in_a.size, dtype=bool)
        for name in names:
            if name in columns_a and name in columns_b:
                x = rows_a[:, columns_a.index(name)]
                y = rows_b[:, columns_b.index(name)]
                with np.errstate(invalid="ignore"):
                    found |= np.abs(x - y) > atol + rtol * np.maximum(np.abs(x), np.abs(y))
        return found

    stats = beyond(stat_fields)
    counts = beyond(count_fields)
    finiteness = alert_flags(a.mode, rows_a) != alert_flags(b.mode, rows_b)
    reason[stats] = 3
    reason[counts] = 2
    reason[finiteness] = 1
    reason[~summarised] = 0
    return reason
