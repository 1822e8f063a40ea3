"""The Graph Execution pane: every traced tensor computed inside graphs, in order.

A virtual list (Line API): rows are fetched from the reader a page at a time and
rendered only when on screen, so a dump of millions of traces scrolls and jumps as
fast as a small one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from reader import format as fmt
from reader.analysis.hunt.steps import Steps, gap_between
from reader.index.trace_search import compile_search
from tfdbg_tui.dialogs.prompt import PromptDialog
from tfdbg_tui.models.comparison_columns import TraceComparison
from tfdbg_tui.models.trace_rows import TraceRows
from tfdbg_tui.panes import graph_execution_cells as cells_drawn
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.text_fit import cut_start
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane, PaneCommand, Section

if TYPE_CHECKING:
    from reader import Run


class GraphExecutionList(LineList):
    """The traces, one row each: index, tensor `op:slot`, op type and the summary.

    Rows of alerts are coloured with their bad counts salient; rows listed in
    `input_traces` (the inputs of the selected op) are highlighted. Where traces were
    not kept, one gap row says which (in steps once `steps` is set).
    """

    # The footer shows these in order, before the keys that work anywhere; at 80
    # columns about four fit, so the rest are `show=False` (listed by `?`).
    MATCH_KEYS = Binding.Group("Match", compact=True)
    BINDINGS = [
        Binding("i", "first_input", "Input", tooltip="Go to the selected op's first input"),
        Binding("v", "show_value", "Value", tooltip="Show the tensor's value (FULL_TENSOR)"),
        Binding("slash", "search", "Find", tooltip="Search op types and names (regex)"),
        Binding("n", "search_next", "Next match", group=MATCH_KEYS),
        Binding("N", "search_previous", "Prev match", key_display="N", group=MATCH_KEYS),
        Binding("g", "go_to_index", "Go to #", tooltip="Go to a trace by its index"),
        Binding("a", "toggle_alerts_only", "Alerts only", show=False),
        Binding("f", "first_alert", "First alert trace", show=False),
        Binding("full_stop", "next_alert", "Next alert trace", show=False),
        Binding("comma", "previous_alert", "Prev alert trace", show=False),
    ]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "graph-execution--alert",
        "graph-execution--bad-count",
        "graph-execution--input",
        "graph-execution--index",
        "graph-execution--type",
        "graph-execution--zero-count",
        "graph-execution--gap",
        "graph-execution--diverged",
    }

    DEFAULT_CSS = """
    GraphExecutionList {
        & > .graph-execution--alert { color: $error; }
        & > .graph-execution--bad-count { color: $text; background: $error; text-style: bold; }
        & > .graph-execution--input { background: $success 35%; }
        & > .graph-execution--index { color: $text-muted; }
        & > .graph-execution--type { color: $secondary; }
        & > .graph-execution--zero-count { color: $text-disabled; }
        & > .graph-execution--gap { color: $warning; text-style: italic; }
        & > .graph-execution--diverged { color: $text; background: $warning 60%; text-style: bold; }
    }
    """

    header_height = 1

    @dataclass
    class TraceSelected(Message):
        """The cursor is on a trace."""

        trace_index: int

    @dataclass
    class SearchRequested(Message):
        """Find the next (or, not `forward`, the previous) trace from `start` whose op
        name or type matches `pattern`; the screen searches in a worker and selects it."""

        pattern: str
        start: int
        forward: bool

    @dataclass
    class ValueRequested(Message):
        """Show the FULL_TENSOR value of trace `trace_index` (read in a worker)."""

        trace_index: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: TraceRows | None = None
        self.mode = "NO_TENSOR"
        self._input_traces: frozenset[int] = frozenset()
        self.first_input: int | None = None  # the selected op's first traced input
        self.last_search: str | None = None
        self._steps: Steps | None = None
        self._comparison: TraceComparison | None = None

    @property
    def comparison(self) -> TraceComparison | None:
        """Run A beside each row (`tfdbg-tui B --compare A`); None shows B alone."""
        return self._comparison

    @comparison.setter
    def comparison(self, comparison: TraceComparison | None) -> None:
        self._comparison = comparison
        self.invalidate()
        self.border_title_changed()

    @property
    def steps(self) -> Steps | None:
        """The run's steps, which name the gaps; None until known."""
        return self._steps

    @steps.setter
    def steps(self, steps: Steps | None) -> None:
        self._steps = steps
        self.invalidate()

    def attach(self, reader: Run, mode: str) -> None:
        """Show the traces of the run `reader`, recorded in `mode`;
        called once the reader is open. The list owns its `TraceRows`."""
        self.rows = TraceRows(reader)
        self.rows.refresh()
        self.mode = mode
        self.data_changed()

    def reload(self) -> None:
        """The dump changed (traces, ops or damage): re-read the rows and repaint."""
        if self.rows is not None:
            self.rows.refresh(self.rows.alert_indices)
            self.data_changed()

    def show_alert_traces(self, alert_indices: np.ndarray) -> None:
        """The trace indices of the alerts, ascending (from the hunt)."""
        if self.rows is not None:
            self.rows.set_alert_indices(alert_indices)
            self.data_changed()

    def data_changed(self) -> None:
        """The rows' data grew or the filter changed: recount and repaint."""
        if self.rows is None:
            return
        self.invalidate()
        self.set_row_count(self.rows.row_count)

    @property
    def input_traces(self) -> frozenset[int]:
        return self._input_traces

    @input_traces.setter
    def input_traces(self, traces: frozenset[int]) -> None:
        if traces == self._input_traces:
            return
        changed = traces ^ self._input_traces
        self._input_traces = traces
        if self.rows is None:
            return
        for trace_index in changed:
            row = self.rows.row_of(trace_index)
            if row is not None:
                self.refresh_row(row)

    def row_variant(self, row: int) -> object:
        return self.rows is not None and self.rows.trace_index(row) in self._input_traces

    @property
    def selected_trace(self) -> int | None:
        """The trace under the cursor; None on a gap row."""
        if self.rows is None or not self.row_count:
            return None
        return self.rows.trace_index(self.cursor)

    @property
    def position(self) -> int | None:
        """The cursor's place in trace order, for moving on from it (`TraceRows.position`)."""
        if self.rows is None or not self.row_count:
            return None
        return self.rows.position(self.cursor)

    def select_trace(self, trace_index: int, *, center: bool = True) -> bool:
        """Move the cursor to `trace_index`; False when it is not on disk.

        A trace the alerts-only filter hides turns the filter off.
        """
        if self.rows is None:
            return False
        row = self.rows.row_of(trace_index)
        if self.rows.alerts_only and (row is None or self.rows.trace_index(row) != trace_index):
            self.rows.alerts_only = False
            self.data_changed()
            self.border_title_changed()
            row = self.rows.row_of(trace_index)
        if row is None:
            return False
        self.move_cursor(row, center=center)
        return True

    def cursor_changed(self, row: int) -> None:
        if self.rows is not None and row < self.row_count:
            trace_index = self.rows.trace_index(row)
            if trace_index is not None:
                self.post_message(self.TraceSelected(trace_index))

    # -- rendering ------------------------------------------------------------------------

    def _index_width(self) -> int:
        return cells_drawn.index_width(self.rows.num_traces if self.rows else 0)

    def _cell_styles(self) -> cells_drawn.CellStyles:
        style = self.component_style
        return cells_drawn.CellStyles(
            index=style("graph-execution--index"),
            type=style("graph-execution--type"),
            bad_count=style("graph-execution--bad-count"),
            zero_count=style("graph-execution--zero-count"),
            gap=style("graph-execution--gap"),
            diverged=style("graph-execution--diverged"),
        )

    def render_header(self, y: int, width: int) -> Text:
        index_width = self._index_width()
        columns, name_width = cells_drawn.layout(self.mode, width, index_width, self._comparison)
        return cells_drawn.header(columns, index_width, name_width, self._comparison)

    def render_row(self, row: int, width: int) -> Text:
        assert self.rows is not None
        index = self.rows.trace_index(row)
        if index is None:
            return self._render_gap(row)
        styles = self._cell_styles()
        index_width = self._index_width()
        text = Text(str(index).rjust(index_width) + " ", style=styles.index)
        trace = self.rows.trace(index)
        if trace is None:
            text.append("(not on disk)")
            return text
        op = self.rows.op(trace.op_id)
        summary = trace.summary
        is_alert = summary is not None and summary.is_alert
        columns, name_width = cells_drawn.layout(self.mode, width, index_width, self._comparison)
        name = f"{op.name}:{trace.slot}" if op else f"<trace point {trace.trace_point}>"
        name = cut_start(literal(name), name_width)
        row_style = self.component_style("graph-execution--alert") if is_alert else None
        text.append(name.ljust(name_width), row_style)
        comparison = self._comparison
        cells = comparison.counterpart(index, summary) if comparison is not None else None
        for column in columns:
            text.append(" ")
            cells_drawn.append_cell(
                text,
                column,
                summary,
                op,
                trace.slot,
                styles,
                row_style,
                diverged=cells is not None and column.key in cells.diverged,
            )
        if comparison is not None and cells is not None:
            cells_drawn.append_a_side(text, comparison, index, cells, columns, width, styles)
        if index in self._input_traces:
            text.stylize(self.component_style("graph-execution--input"))
        return text

    def _render_gap(self, row: int) -> Text:
        assert self.rows is not None
        begin, end = self.rows.gap_at(row) or (0, 0)
        gap = gap_between(self._steps, fmt.STREAM_GRAPH_TRACES, begin, end)
        what = gap.describe()
        if gap.steps is not None:
            what += f" (#{begin}-#{end - 1})"
        return Text(f"┄┄ {what} ┄┄", style=self.component_style("graph-execution--gap"))

    # -- actions ------------------------------------------------------------------------

    def _jump_to_alert(self, which: str) -> None:
        target = self.rows.alert_trace(which, self.position) if self.rows else None
        if target is None:
            self.notify("no alert in the graph traces")
        else:
            self.select_trace(target)

    def action_first_alert(self) -> None:
        self._jump_to_alert("first")

    def action_next_alert(self) -> None:
        self._jump_to_alert("next")

    def action_previous_alert(self) -> None:
        self._jump_to_alert("previous")

    def select_divergence(self, which: str) -> bool:
        """Move to the "first", "next" or "previous" trace that diverges from run A
        (`comparison`); False, said, when there is none that way."""
        if self._comparison is None:
            return False
        alignment = self._comparison.alignment
        position = self.position
        if which == "first" or position is None:
            target = alignment.first
        else:
            target = alignment.next_divergence(position, forward=which == "next")
        if target is None:
            self.notify(
                "no divergence in the graph traces"
                if which == "first"
                else f"no {'later' if which == 'next' else 'earlier'} divergence"
            )
            return False
        self.select_trace(target)
        return True

    def action_toggle_alerts_only(self) -> None:
        if self.rows is None:
            return
        current = self.selected_trace
        self.rows.alerts_only = not self.rows.alerts_only
        self.rows.refresh()
        self.data_changed()
        self.border_title_changed()
        if current is not None:
            row = self.rows.row_of(current)
            if row is not None:
                self.move_cursor(row, center=True)

    def border_title_changed(self) -> None:
        if isinstance(self.parent, Pane):
            alerts_only = self.rows is not None and self.rows.alerts_only
            self.parent.set_title_suffix(
                Text(" (alerts only)" if alerts_only else "")
                + (self._comparison.title_suffix if self._comparison is not None else Text())
            )

    def action_go_to_index(self) -> None:
        self.app.push_screen(PromptDialog("Go to trace #", "a trace index"), self._go_to_index)

    def _go_to_index(self, value: str | None) -> None:
        if not value:
            return
        try:
            index = int(value.strip().lstrip("#"))
        except ValueError:
            self.notify(f"not a trace index: {value!r}", severity="error", markup=False)
            return
        if not self.select_trace(index):
            self.notify(f"trace #{index} is not in the dump", severity="warning")

    def action_search(self) -> None:
        self.app.push_screen(
            PromptDialog("Search op name or type (regex)", "e.g. Log|softmax"), self._search_entered
        )

    def _search_entered(self, value: str | None) -> None:
        if not value:
            return
        _, note = compile_search(value)
        if note is not None:
            self.notify(literal(note), severity="warning", markup=False)
        self.last_search = value
        self.post_message(self.SearchRequested(value, (self.position or 0) + 1, True))

    def _search_again(self, forward: bool) -> None:
        if self.last_search is None:
            self.notify("no search yet: press / first")
            return
        start = (self.position or 0) + (1 if forward else -1)
        if start < 0:
            self.notify("no earlier match")
            return
        self.post_message(self.SearchRequested(self.last_search, start, forward))

    def action_search_next(self) -> None:
        self._search_again(True)

    def action_search_previous(self) -> None:
        self._search_again(False)

    def action_first_input(self) -> None:
        if self.first_input is None:
            self.notify("the selected op has no traced input")
        else:
            self.select_trace(self.first_input)

    def action_show_value(self) -> None:
        current = self.selected_trace
        if current is not None:
            self.post_message(self.ValueRequested(current))


class GraphExecutionPane(Pane):
    """Container of the Graph Execution list: border, title, zoomable."""

    CONTENT = GraphExecutionList
    SECTION = Section("3", "graph-execution", "Graph Execution")
    COMMANDS = (
        PaneCommand("first_alert", "First alert trace"),
        PaneCommand("toggle_alerts_only", "Toggle alerts-only filter"),
        PaneCommand("go_to_index", "Go to trace index"),
        PaneCommand("search", "Search op name or type"),
        PaneCommand("show_value", "Show tensor value (FULL_TENSOR)"),
    )
