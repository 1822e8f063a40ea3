"""`TraceComparison`: Graph Execution beside a second run (`tfdbg-tui B --compare A`):
what A's side of its rows holds (A's counterpart and the fields that differ), set on
the list by the screen.

Each row of B gets, after its own columns, its counterpart in A
(`reader.analysis.compare.diff`'s alignment): A's trace index and the same summary
columns, with the cells that differ beyond the tolerance marked on both sides, a `≠`
between them on a divergent row, and "only in B" where A has no counterpart. What aligns
and what diverges is decided in `reader.analysis.compare.diff` (`RunAlignment`,
`differing_fields`); this module reads A's side of a row, and
`tfdbg_tui.panes.graph_execution_cells` draws it. No widget and no drawing here: the
Graph Execution list holds one `TraceComparison`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from reader.analysis.compare.diff import RunAlignment, differing_fields
from reader.model import Op, Summary, Trace
from tfdbg_tui.models.trace_rows import TraceRows
from tfdbg_tui.text.rich_literal import literal_text

if TYPE_CHECKING:
    from reader import Run

# Summary fields whose difference shows in the combined "inf/NaN" column.
_NON_FINITE_FIELDS = frozenset({"is_alert", "nan", "neg_inf", "pos_inf"})


@dataclass(frozen=True)
class CounterpartCells:
    """A's side of one B row: its trace and op (None: no counterpart or not on disk)
    and the summary fields that differ (`reader.analysis.compare.diff.differing_fields`)."""

    index: int | None
    trace: Trace | None
    op: Op | None
    diverged: frozenset[str]
    reason: str | None  # why the row diverges (`reader.analysis.compare.diff` reasons), or None


class TraceComparison:
    """What the Graph Execution list needs to show B beside A.

    Built in a worker (`refresh` reads A's kept traces), then set on the list.

    Args:
        alignment: `reader.analysis.compare.diff.align_runs(a, b)`.
        reader_a: Run A (pages of its traces are read to paint).
        run_id_a: A's run id, for the status line.
    """

    def __init__(self, alignment: RunAlignment, reader_a: Run, run_id_a: str) -> None:
        self.alignment = alignment
        self.run_id_a = run_id_a
        self.rows_a = TraceRows(reader_a)
        self.mode_a = reader_a.metadata.tensor_debug_mode

    def refresh(self) -> None:
        """Read A's trace count and kept ranges (in a worker)."""
        self.rows_a.refresh()

    @property
    def title_suffix(self) -> Text:
        """What Graph Execution's border adds: the divergences, or that there are none."""
        versus = f" vs {self.name_a}:"
        divergent = int(self.alignment.divergent.shape[0])
        first = self.alignment.diff.first_divergence
        if divergent:
            return literal_text(f"{versus} {divergent:,} divergent")
        return literal_text(
            f"{versus} no divergence" if first is None else f"{versus} eager divergence only"
        )

    @property
    def name_a(self) -> str:
        """What the comparison calls A ("A", or "good" under `run --ab`)."""
        return self.alignment.diff.names[0]

    def a_index_width(self) -> int:
        """Cells of A's trace index column (its header, "A #", included)."""
        return max(3, len(str(self.rows_a.num_traces)), len(self.name_a) + 2)

    def counterpart(self, b_index: int, summary_b: Summary | None) -> CounterpartCells:
        """A's side of B's trace `b_index`."""
        reason = self.alignment.reason_of(b_index)
        a_index = self.alignment.counterpart_of(b_index)
        trace = self.rows_a.trace(a_index) if a_index is not None else None
        if trace is None:
            return CounterpartCells(a_index, None, None, frozenset(), reason)
        fields = differing_fields(
            trace.summary, summary_b, rtol=self.alignment.diff.rtol, atol=self.alignment.diff.atol
        )
        if fields & _NON_FINITE_FIELDS:
            fields |= {"nonfinite"}
        return CounterpartCells(a_index, trace, self.rows_a.op(trace.op_id), fields, reason)
