"""Graph Execution beside a second run (`tfdbg-tui B --compare A`).

Each row of B gets, after its own columns, its counterpart in A (`reader.analysis.diff`'s
alignment): A's trace index and the same summary columns, with the cells that differ
beyond the tolerance marked on both sides, a `≠` between them on a divergent row, and
"only in B" where A has no counterpart. What aligns and what diverges is decided in
`reader.analysis.diff` (`RunAlignment`, `differing_fields`); this module only lays it out.
No widget here: the Graph Execution list holds one `TraceComparison` and paints with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from reader.analysis.diff import RunAlignment, differing_fields
from reader.model import Op, Summary, Trace
from tfdbg_tui.models.trace_rows import TraceRows
from tfdbg_tui.text.text_fit import cut_middle, keep_by_priority

# Between B's columns and A's: a rule, or `DIVERGENT_MARK` on a divergent row.
SEPARATOR, DIVERGENT_MARK = " │", " ≠"
# Tensor names keep fewer cells than in one run's view, so that at 80 columns both
# runs' non-finite counts fit beside them.
NAME_MIN_WIDTH = 10
# Summary fields whose difference shows in the combined "inf/NaN" column.
_NON_FINITE_FIELDS = frozenset({"is_alert", "nan", "neg_inf", "pos_inf"})


@dataclass(frozen=True)
class CompareColumn:
    """A summary column shown for both runs (`both`) or for B only (the op type)."""

    key: str
    title: str
    width: int
    priority: int  # lower is kept first when the pane is narrow
    both: bool = True


# Most telling first: whether a tensor is finite in each run, then its dtype (a float16
# run against a float32 one), then the counts, then B's op type.
_COLUMNS = (
    CompareColumn("nonfinite", "inf/NaN", 7, 0), CompareColumn("dtype", "dtype", 8, 1),
    CompareColumn("size", "size", 6, 2), CompareColumn("neg", "-", 6, 4),
    CompareColumn("zero", "0", 6, 3), CompareColumn("pos", "+", 6, 5),
    CompareColumn("neg_inf", "-inf", 6, 6), CompareColumn("pos_inf", "+inf", 6, 7),
    CompareColumn("nan", "NaN", 6, 8), CompareColumn("shape", "shape", 16, 2),
    CompareColumn("max", "max", 9, 9), CompareColumn("min", "min", 9, 10),
    CompareColumn("mean", "mean", 9, 11),
    CompareColumn("type", "op type", 14, 12, both=False),
)
# The columns each mode records (the combined "inf/NaN" column in every health mode).
_KEYS_BY_MODE = {
    "FULL_HEALTH": {"nonfinite", "dtype", "size", "neg", "zero", "pos", "neg_inf", "pos_inf",
                    "nan", "type"},
    "CONCISE_HEALTH": {"nonfinite", "size", "neg_inf", "pos_inf", "nan", "type"},
    "CURT_HEALTH": {"nonfinite", "type"},
    "SHAPE": {"dtype", "size", "shape", "type"},
}
_KEYS_BY_MODE["FULL_TENSOR"] = _KEYS_BY_MODE["FULL_HEALTH"]
_KEYS_BY_MODE["FULL_STATS"] = _KEYS_BY_MODE["FULL_HEALTH"] | {"min", "max", "mean"}
_DEFAULT_KEYS = {"dtype", "type"}


@dataclass(frozen=True)
class CounterpartCells:
    """A's side of one B row: its trace and op (None: no counterpart or not on disk)
    and the summary fields that differ (`reader.analysis.diff.differing_fields`)."""

    index: int | None
    trace: Trace | None
    op: Op | None
    diverged: frozenset[str]
    reason: str | None  # why the row diverges (`reader.analysis.diff` reasons), or None


class TraceComparison:
    """What the Graph Execution list needs to show B beside A.

    Built in a worker (`refresh` reads A's kept traces), then set on the list.

    Args:
        alignment: `reader.analysis.diff.align_runs(a, b)`.
        reader_a: Run A's `reader.DumpReader` (pages of its traces are read to paint).
        run_id_a: A's run id, for the status line.
    """

    def __init__(self, alignment: RunAlignment, reader_a, run_id_a: str) -> None:
        self.alignment = alignment
        self.run_id_a = run_id_a
        self.rows_a = TraceRows(reader_a)
        self.mode_a = reader_a.metadata.tensor_debug_mode

    def refresh(self) -> None:
        """Read A's trace count and kept ranges (in a worker)."""
        self.rows_a.refresh()

    @property
    def title_suffix(self) -> str:
        """What Graph Execution's border adds: the divergences, or that there are none."""
        divergent = int(self.alignment.divergent.shape[0])
        if divergent:
            return f" vs A: {divergent:,} divergent"
        first = self.alignment.diff.first_divergence
        return " vs A: no divergence" if first is None else " vs A: eager divergence only"

    def columns(self, mode_b: str) -> list[CompareColumn]:
        keys = _KEYS_BY_MODE.get(mode_b, _DEFAULT_KEYS)
        keys_a = _KEYS_BY_MODE.get(self.mode_a, _DEFAULT_KEYS)
        return [c for c in _COLUMNS if c.key in keys and (not c.both or c.key in keys_a)]

    def a_index_width(self) -> int:
        return max(3, len(str(self.rows_a.num_traces)))

    def layout(self, mode_b: str, width: int, index_width: int
               ) -> tuple[list[CompareColumn], int]:
        """The columns that fit, in order, and the width of the tensor name."""
        fixed = index_width + 1 + len(SEPARATOR) + 1 + self.a_index_width()
        chosen = keep_by_priority(self.columns(mode_b), width - fixed - NAME_MIN_WIDTH,
                                  cost=_cells, priority=lambda c: c.priority)
        return chosen, width - fixed - sum(_cells(c) for c in chosen)

    def header(self, columns: list[CompareColumn]) -> Text:
        """A's header, after B's: "A #" and the titles of A's columns."""
        text = Text(SEPARATOR + " " + "A #".rjust(self.a_index_width()))
        for column in columns:
            if column.both:
                text.append(" " + _aligned(column.key, column.title, column.width))
        return text

    def counterpart(self, b_index: int, summary_b: Summary | None) -> CounterpartCells:
        """A's side of B's trace `b_index`."""
        reason = self.alignment.reason_of(b_index)
        a_index = self.alignment.counterpart_of(b_index)
        trace = self.rows_a.trace(a_index) if a_index is not None else None
        if trace is None:
            return CounterpartCells(a_index, None, None, frozenset(), reason)
        fields = differing_fields(trace.summary, summary_b, rtol=self.alignment.diff.rtol,
                                  atol=self.alignment.diff.atol)
        if fields & _NON_FINITE_FIELDS:
            fields |= {"nonfinite"}
        return CounterpartCells(a_index, trace, self.rows_a.op(trace.op_id), fields, reason)

    def append_a_side(self, pane, text: Text, b_index: int, cells: CounterpartCells,
                      columns: list[CompareColumn], width: int) -> None:
        """Append A's side of a row to `text` (B's side); `pane` is the Graph Execution
        list, which renders cells the same way for both runs (`append_cell`)."""
        index_width = self.a_index_width()
        if cells.reason is not None:
            text.append(DIVERGENT_MARK, pane.component_style("graph-execution--diverged"))
        else:
            text.append(SEPARATOR, pane.component_style("graph-execution--index"))
        text.append(" ")
        if cells.trace is None:
            room = max(0, width - text.cell_len)
            if cells.index is None:
                note = "only in B" if b_index < self.alignment.counterpart.shape[0] \
                    else "not compared (newer than the comparison)"
            else:
                note = f"#{cells.index} not on disk"
            text.append(cut_middle(note, room), pane.component_style("graph-execution--gap"))
            return
        text.append(str(cells.index).rjust(index_width),
                    pane.component_style("graph-execution--index"))
        for column in columns:
            if column.both:
                text.append(" ")
                pane.append_cell(text, column, cells.trace.summary, cells.op, cells.trace.slot,
                                 diverged=column.key in cells.diverged)


def _aligned(key: str, title: str, width: int) -> str:
    return title.ljust(width) if key in ("type", "dtype", "shape") else title.rjust(width)


def _cells(column: CompareColumn) -> int:
    """Cells a column takes in a row: its width and a space, once per run it shows."""
    return (column.width + 1) * (2 if column.both else 1)

