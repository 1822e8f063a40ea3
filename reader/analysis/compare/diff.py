"""Where two runs part: align run A (good) and run B (bad), find their first divergence
and which summary fields differ.

"It works in float32 and not in mixed precision", "with XLA and not without", "at last
week's commit and not today's": the question is the first place the two runs differ,
not the first NaN of one of them.

**Alignment.** A graph tensor is known by its step (`reader.analysis.hunt.steps`; the whole run when
there are no steps), its graph's name (without TensorFlow's numeric suffix), its op's
name, its output slot and its occurrence: the k-th trace of that tensor in the step,
so loop iterations align one by one. An eager output is known by its step, its op
type (a function call's name without its suffix), its occurrence among that step's
executions of that type, and its slot. What has no counterpart (the Cast ops a
mixed-precision policy inserts, ops only one version has) is counted by op type and
skipped.

**Divergence**, in B's execution order (a call's graph traces before the call): first
the first aligned tensor finite on one side and not on the other; when there is none,
the first whose values differ beyond the tolerance: the element counts (size, -inf,
+inf, NaN, negative, zero, positive) when both sides have them, the values when both
runs are FULL_TENSOR. Modes that differ are compared on what both record.

The words that describe a divergence name the runs "A" and "B", or the ``names`` the
caller gives them (``tfdbg-tui run --ab`` names them by what each run is).

Decided here once; ``tfdbg-tui diff`` only formats it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from reader import format as fmt
from reader.analysis.compare.tensor_alignment import (
    TensorKeys,
    TensorTable,
    align,
    compare_rows,
    output_keys,
    trace_keys,
)
from reader.model import Frame, Summary

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-6
# Summary fields compared as counts, when both sides have them.
COUNT_FIELDS = ("size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos")
GRAPH, EAGER = "graph", "eager"
# Kinds of divergence.
FINITENESS = "finiteness"  # finite on one side, NaN or infinity on the other
COUNTS = "counts"  # element counts differ beyond the tolerance
VALUES = "values"  # FULL_TENSOR values differ beyond the tolerance
STATS = "stats"  # FULL_STATS: min, max or mean differ beyond the tolerance
REASONS = (FINITENESS, COUNTS, VALUES, STATS)
# FULL_STATS fields compared, when both sides have them (std follows from the rest
# closely enough that it would only repeat them).
STAT_FIELDS = ("min", "max", "mean")
# How a divergence's words name runs A and B unless the caller names them.
SIDE_NAMES = ("A", "B")


@dataclass(frozen=True, slots=True)
class Side:
    """One run's record of an aligned tensor."""

    index: int  # trace index (graph) or execution index (eager)
    position: int  # the execution it ran at: the call (graph) or itself (eager)
    summary: Summary | None
    op_id: int | None = None  # graph tensors
    stack_id: int | None = None


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first aligned tensor whose two records disagree."""

    kind: str  # GRAPH or EAGER
    reason: str  # FINITENESS, COUNTS or VALUES
    op_type: str
    op_name: str | None
    graph_name: str | None
    slot: int
    step: int | None
    occurrence: int
    a: Side
    b: Side
    detail: str  # what differs, in words
    frame: Frame | None  # innermost user frame of B's op (or eager call)
    max_abs_error: float | None = None  # VALUES
    max_rel_error: float | None = None


@dataclass(frozen=True)
class RunDiff:
    """The comparison of two runs."""

    aligned_graph: int
    aligned_eager: int
    unmatched_a: Counter = field(default_factory=Counter)  # op type -> count
    unmatched_b: Counter = field(default_factory=Counter)
    first_divergence: Divergence | None = None
    compared: str = ""  # what was compared: "finiteness and counts", "values", ...
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    names: tuple[str, str] = SIDE_NAMES  # what the divergence's detail calls A and B

    @property
    def aligned(self) -> int:
        return self.aligned_graph + self.aligned_eager


def compare_runs(
    a: AnalysedRun,
    b: AnalysedRun,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    names: tuple[str, str] = SIDE_NAMES,
) -> RunDiff:
    """Align ``a`` and ``b`` and find their first divergence (None: none found);
    ``names``: what its detail calls ``a`` and ``b``."""
    return _align(a, b, rtol, atol, names, every=False)[0]


@dataclass(frozen=True)
class RunAlignment:
    """B's graph traces against A's, for browsing B with A beside it (the TUI's
    ``--compare``): each B trace's counterpart in A and every divergent B trace.

    Computed once by `align_runs` (it walks both runs: run it off any event loop);
    then every question is an array lookup or a binary search.
    """

    diff: RunDiff
    counterpart: np.ndarray  # int64, B trace index -> A trace index; -1: no counterpart
    divergent: np.ndarray  # int64, ascending: B trace indices of divergent graph tensors
    reasons: np.ndarray  # uint8, per `divergent`: an index into `REASONS`

    def counterpart_of(self, b_index: int) -> int | None:
        """The A trace aligned with B's trace ``b_index``; None when it has none (or
        the trace was not on disk when the runs were aligned)."""
        if not 0 <= b_index < self.counterpart.shape[0]:
            return None
        found = int(self.counterpart[b_index])
        return None if found < 0 else found

    def reason_of(self, b_index: int) -> str | None:
        """Why B's trace ``b_index`` diverges (`FINITENESS`, `COUNTS`, `VALUES`), or
        None when it does not."""
        position = int(np.searchsorted(self.divergent, b_index))
        if position < self.divergent.shape[0] and self.divergent[position] == b_index:
            return REASONS[int(self.reasons[position])]
        return None

    @property
    def first(self) -> int | None:
        """The B trace of the first divergence: `RunDiff.first_divergence` when it is a
        graph tensor, else the first divergent graph trace; None without one."""
        first = self.diff.first_divergence
        if first is not None and first.kind == GRAPH:
            return first.b.index
        return int(self.divergent[0]) if self.divergent.shape[0] else None

    def next_divergence(self, b_index: int, forward: bool = True) -> int | None:
        """The divergent B trace after (``forward``) or before ``b_index``; None when
        there is none that way."""
        if forward:
            position = int(np.searchsorted(self.divergent, b_index, side="right"))
            return int(self.divergent[position]) if position < self.divergent.shape[0] else None
        position = int(np.searchsorted(self.divergent, b_index, side="left")) - 1
        return int(self.divergent[position]) if position >= 0 else None


def align_runs(
    a: AnalysedRun,
    b: AnalysedRun,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    names: tuple[str, str] = SIDE_NAMES,
) -> RunAlignment:
    """Align ``a`` and ``b`` as `compare_runs` does, comparing every aligned pair (not
    only up to the first divergence) and keeping B's graph traces' counterparts."""
    diff, counterpart, divergent, reasons = _align(a, b, rtol, atol, names, every=True)
    return RunAlignment(
        diff,
        counterpart,
        np.asarray(divergent, dtype=np.int64),
        np.asarray(reasons, dtype=np.uint8),
    )


def differing_fields(
    a: Summary | None, b: Summary | None, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL
) -> frozenset[str]:
    """The `Summary` fields in which ``a`` and ``b`` differ: ``"is_alert"`` when one is
    finite and the other not, and each count of `COUNT_FIELDS` and statistic of
    `STAT_FIELDS` both record that differs by more than ``atol + rtol * max(|a|, |b|)``."""
    if a is None or b is None:
        return frozenset()
    fields = {"is_alert"} if a.is_alert != b.is_alert else set()
    for name in COUNT_FIELDS + STAT_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and abs(x - y) > atol + rtol * max(abs(x), abs(y)):
            fields.add(name)
    return frozenset(fields)


def _align(
    a: AnalysedRun, b: AnalysedRun, rtol: float, atol: float, names: tuple[str, str], every: bool
) -> tuple[RunDiff, np.ndarray, list[int], list[int]]:
    """The comparison behind `compare_runs` (``every`` False: the first divergence only)
    and `align_runs` (``every``: every divergent graph trace, and the counterparts)."""
    values = a.metadata.tensor_debug_mode == fmt.FULL_TENSOR == b.metadata.tensor_debug_mode
    side_a, side_b = _Walk(a), _Walk(b)
    graph_table, eager_table = TensorTable(), TensorTable()
    graph = _Comparison(
        GRAPH,
        side_a,
        side_b,
        trace_keys(a, graph_table),
        trace_keys(b, graph_table),
        graph_table,
        values,
        rtol,
        atol,
        names,
        every,
    )
    eager = _Comparison(
        EAGER,
        side_a,
        side_b,
        output_keys(a, eager_table),
        output_keys(b, eager_table),
        eager_table,
        values,
        rtol,
        atol,
        names,
        every,
    )
    # The first divergence: finite on one side first, then any other; in B's order (a
    # call's graph traces before the call).
    candidates = list(graph.candidates()) + list(eager.candidates())
    first = None
    if candidates:
        key, record_a, record_b, found = min(candidates, key=lambda c: c[0])[1]
        first = side_b.divergence(key, record_a, record_b, *found)
    modes = {a.metadata.tensor_debug_mode, b.metadata.tensor_debug_mode}
    if values:
        compared = "finiteness, then values"
    elif fmt.NO_TENSOR in modes:
        compared = "nothing: a NO_TENSOR run records no values, only the alignment"
    elif modes == {fmt.FULL_STATS}:
        compared = "finiteness, then element counts, then min, max and mean"
    else:
        compared = "finiteness, then element counts"
    diff = RunDiff(
        aligned_graph=graph.aligned,
        aligned_eager=eager.aligned,
        unmatched_a=graph.unmatched(a=True) + eager.unmatched(a=True),
        unmatched_b=graph.unmatched(a=False) + eager.unmatched(a=False),
        first_divergence=first,
        compared=compared,
        rtol=rtol,
        atol=atol,
        names=names,
    )
    counterpart = graph.counterparts(b.num_traces) if every else np.empty(0, np.int64)
    divergent, reasons = graph.divergent() if every else ([], [])
    return diff, counterpart, divergent, reasons


class _Comparison:
    """One kind of record (graph traces or eager outputs) of two runs, aligned and
    compared in columns (`reader.analysis.compare.tensor_alignment`); records are decoded
    only for the divergences reported, and for FULL_TENSOR values."""

    def __init__(
        self,
        kind: str,
        a: _Walk,
        b: _Walk,
        keys_a: TensorKeys,
        keys_b: TensorKeys,
        table: TensorTable,
        values: bool,
        rtol: float,
        atol: float,
        names: tuple[str, str],
        every: bool,
    ) -> None:
        self.kind, self.a, self.b, self.table = kind, a, b, table
        self.keys_a, self.keys_b = keys_a, keys_b
        self.in_a, self.in_b = align(keys_a, keys_b)
        self.aligned = int(self.in_a.size)
        self.values, self.rtol, self.atol, self.every = values, rtol, atol, every
        self.names = names
        self.reason = compare_rows(
            keys_a,
            keys_b,
            self.in_a,
            self.in_b,
            () if values else COUNT_FIELDS,
            () if values else STAT_FIELDS,
            rtol,
            atol,
        )
        self._found: dict[int, tuple[str, str, float | None, float | None]] = {}
        if values:
            self._compare_values()

    def _pair(self, k: int) -> tuple[_Key, Side, Side]:
        """The key and both records of aligned pair ``k``."""
        row_a, row_b = int(self.in_a[k]), int(self.in_b[k])
        key = self.keys_b.key[row_b]
        graph, name, slot = self.table.names[int(key["tensor"])]
        op_type = self.table.op_types[int(key["tensor"])]
        if self.kind == EAGER:
            slot = int(key["slot"])
        return (
            _Key(self.kind, int(key["step"]), graph, name, slot, int(key["occurrence"]), op_type),
            self.a.side(self.kind, self.keys_a, row_a),
            self.b.side(self.kind, self.keys_b, row_b),
        )

    def _compare_values(self) -> None:
        """FULL_TENSOR against FULL_TENSOR: the values of pairs finite on both sides are
        decoded and compared (all of them, or in B's order up to the first that
        differs)."""
        for k in np.flatnonzero(self.reason == 0).tolist():
            key, side_a, side_b = self._pair(k)
            found = _compare(
                key, side_a, side_b, True, self.a.run, self.b.run, self.rtol, self.atol, self.names
            )
            if found is not None:
                self._found[k] = found
                self.reason[k] = _REASON_CODES.index(found[0])
                if not self.every:
                    return

    def candidates(self) -> Iterator[tuple[tuple[int, int, int, int], tuple]]:
        """The first finite-on-one-side pair and the first other divergent pair, in B's
        order, each as ((priority, position, kind, index), (key, side A, side B, found))."""
        kind_order = 0 if self.kind == GRAPH else 1
        for priority, hits in enumerate(
            (np.flatnonzero(self.reason == 1), np.flatnonzero(self.reason > 1))
        ):
            if not hits.size:
                continue
            rows_b = self.in_b[hits]
            k = int(hits[np.lexsort((rows_b, self.keys_b.position[rows_b]))[0]])
            key, side_a, side_b = self._pair(k)
            found = self._found.get(k) or _compare(
                key, side_a, side_b, False, self.a.run, self.b.run, self.rtol, self.atol, self.names
            )
            if found is not None:
                yield (
                    (priority, side_b.position, kind_order, side_b.index),
                    (key, side_a, side_b, found),
                )

    def unmatched(self, a: bool) -> Counter:
        """Op types of one run's records without a counterpart, counted."""
        keys, matched = (self.keys_a, self.in_a) if a else (self.keys_b, self.in_b)
        alone = np.ones(keys.key.size, dtype=bool)
        alone[matched] = False
        counts = np.bincount(keys.key["tensor"][alone], minlength=len(self.table.op_types))
        found: Counter = Counter()
        for code in np.flatnonzero(counts).tolist():
            found[self.table.op_types[code]] += int(counts[code])
        return found

    def counterparts(self, size: int) -> np.ndarray:
        """int64, B index -> the aligned A index, -1 for none (graph traces)."""
        counterpart = np.full(size, -1, dtype=np.int64)
        b_index = self.keys_b.index[self.in_b]
        inside = b_index < size
        counterpart[b_index[inside]] = self.keys_a.index[self.in_a][inside]
        return counterpart

    def divergent(self) -> tuple[list[int], list[int]]:
        """B indices of the divergent pairs, ascending, and each one's reason (an index
        into `REASONS`)."""
        hits = np.flatnonzero(self.reason > 0)
        b_index = self.keys_b.index[self.in_b[hits]]
        order = np.argsort(b_index, kind="stable")
        reasons = [REASONS.index(_REASON_CODES[c]) for c in self.reason[hits][order].tolist()]
        return b_index[order].tolist(), reasons


# `tensor_alignment.compare_rows` codes (1, 2, 3) and VALUES (4): what differs.
_REASON_CODES = (None, FINITENESS, COUNTS, STATS, VALUES)


@dataclass(frozen=True, slots=True)
class _Key:
    kind: str
    step: int
    graph: str | None
    name: str  # op name (graph) or op type (eager)
    slot: int
    occurrence: int
    op_type: str


def _compare(
    key: _Key,
    a: Side,
    b: Side,
    values: bool,
    run_a: AnalysedRun,
    run_b: AnalysedRun,
    rtol: float,
    atol: float,
    names: tuple[str, str],
) -> tuple[str, str, float | None, float | None] | None:
    """(reason, detail, max abs error, max rel error) when ``a`` and ``b`` differ; the
    detail calls the runs ``names``."""
    sa, sb = a.summary, b.summary
    name_a, name_b = names
    fields = differing_fields(sa, sb, rtol=rtol, atol=atol)
    if "is_alert" in fields:
        assert sa is not None and sb is not None
        bad, good = (name_b, name_a) if sb.is_alert else (name_a, name_b)
        return FINITENESS, f"non-finite in {bad}, finite in {good}", None, None
    if values:
        va, vb = _value(run_a, key.kind, a, key.slot), _value(run_b, key.kind, b, key.slot)
        if va is None or vb is None:
            return None
        if va.shape != vb.shape:
            return VALUES, f"shape {va.shape} in {name_a}, {vb.shape} in {name_b}", None, None
        if va.size == 0 or not (
            np.issubdtype(va.dtype, np.number) and np.issubdtype(vb.dtype, np.number)
        ):
            return None if np.array_equal(va, vb) else (VALUES, "values differ", None, None)
        x, y = va.astype(np.float64), vb.astype(np.float64)
        both_finite = np.isfinite(x) & np.isfinite(y)
        with np.errstate(invalid="ignore"):
            error = np.where(both_finite, np.abs(x - y), 0.0)
            relative = error / np.maximum(np.abs(x), np.finfo(np.float64).tiny)
        same_nonfinite = np.where(both_finite, True, (x == y) | (np.isnan(x) & np.isnan(y)))
        beyond = (error > atol + rtol * np.abs(x)) | ~same_nonfinite
        if beyond.any():
            abs_error, rel_error = float(error.max()), float(relative.max())
            return (
                VALUES,
                f"max absolute error {abs_error:.3g}, max relative error "
                f"{rel_error:.3g} ({int(beyond.sum()):,} of {x.size:,} values)",
                abs_error,
                rel_error,
            )
        return None
    differing = [
        f"{_COUNT_WORDS[name]} {getattr(sa, name):,} in {name_a}, {getattr(sb, name):,} in {name_b}"
        for name in COUNT_FIELDS
        if name in fields
    ]
    if differing:
        return COUNTS, "; ".join(differing), None, None
    differing = [
        f"{name} {getattr(sa, name):.6g} in {name_a}, {getattr(sb, name):.6g} in {name_b}"
        for name in STAT_FIELDS
        if name in fields
    ]
    if differing:
        return STATS, "; ".join(differing), None, None
    return None


_COUNT_WORDS = {
    "size": "size",
    "neg_inf": "-inf",
    "pos_inf": "+inf",
    "nan": "NaN",
    "neg": "negative",
    "zero": "zero",
    "pos": "positive",
}


def _value(run: AnalysedRun, kind: str, side: Side, slot: int) -> np.ndarray | None:
    if kind == GRAPH:
        return run.trace_value(side.index)
    return run.execution_value(side.index, slot)


class _Walk:
    """One run's records, decoded for the pairs that are reported or compared by
    value."""

    def __init__(self, run: AnalysedRun) -> None:
        self.run = run

    def side(self, kind: str, keys: TensorKeys, row: int) -> Side:
        """The record of entry ``row`` of ``keys``: a graph trace, or an eager output."""
        if kind == GRAPH:
            trace = self.run.trace(int(keys.index[row]))
            stack_id = self.run.op(trace.op_id).stack_id if trace.op_id is not None else None
            return Side(trace.index, trace.step, trace.summary, trace.op_id, stack_id)
        execution = self.run.execution(int(keys.index[row]))
        slot = int(keys.key["slot"][row])
        return Side(
            execution.index, execution.index, execution.summary(slot), None, execution.stack_id
        )

    def divergence(
        self,
        key: _Key,
        a: Side,
        b: Side,
        reason: str,
        detail: str,
        abs_error: float | None,
        rel_error: float | None,
    ) -> Divergence:
        frame = self.run.innermost_user_frame(b.stack_id)
        return Divergence(
            kind=key.kind,
            reason=reason,
            op_type=key.op_type,
            op_name=key.name if key.kind == GRAPH else None,
            graph_name=key.graph,
            slot=key.slot,
            step=key.step if key.step >= 0 else None,
            occurrence=key.occurrence,
            a=a,
            b=b,
            detail=detail,
            frame=frame,
            max_abs_error=abs_error,
            max_rel_error=rel_error,
        )
