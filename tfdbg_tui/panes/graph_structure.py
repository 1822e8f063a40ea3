"""The Graph Structure pane: the selected op in bold, its inputs above, consumers below.

Each input and consumer row shows the summary of its trace nearest the selected one;
choosing a row (Enter) asks the screen to jump to that trace. Under the selected op,
the history of its output and of each input over the run
(`reader.analysis.diagnosis.history`): a sparkline over one shared axis of steps
(`reader.analysis.diagnosis.history.step_axis`), so that where each broke lines up, and
each one's history in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from reader.analysis.diagnosis.history import TensorHistory, step_axis
from tfdbg_tui.models.context_loader import Neighbour, TraceContext
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.summary_format import summary_text
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane, Section

# Cells of a history sparkline: few enough to leave room for the words at 80 columns.
HISTORY_CELLS = 12
# A cell's glyph: no trace in its steps, all finite, or the share of non-finite traces.
NO_TRACE = " "
FINITE = "·"
NONFINITE_LEVELS = "▁▂▃▄▅▆▇█"


def history_cells(history: TensorHistory, axis: np.ndarray) -> str:
    """Glyphs over the steps of ``axis``, `HISTORY_CELLS` at most (one per step when
    fewer): where the tensor was finite or not."""
    cells = []
    for share in history.nonfinite_share(axis, HISTORY_CELLS):
        if np.isnan(share):
            cells.append(NO_TRACE)
        elif share == 0:
            cells.append(FINITE)
        else:
            level = math.ceil(share * len(NONFINITE_LEVELS)) - 1
            cells.append(NONFINITE_LEVELS[min(max(level, 0), len(NONFINITE_LEVELS) - 1)])
    return "".join(cells)


class GraphStructureList(LineList):
    """Rows: an "inputs" heading, the inputs, the selected op, the history of its output
    and inputs, "consumers", consumers."""

    BINDINGS = [Binding("enter", "choose", "Go to op's trace"), *LineList.SIDEWAYS_BINDINGS]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "graph-structure--heading",
        "graph-structure--selected",
        "graph-structure--type",
        "graph-structure--note",
        "graph-structure--finite",
        "graph-structure--nonfinite",
    }

    DEFAULT_CSS = """
    GraphStructureList {
        & > .graph-structure--heading { color: $text-muted; text-style: italic; }
        & > .graph-structure--selected { text-style: bold; color: $text; background: $boost; }
        & > .graph-structure--type { color: $secondary; }
        & > .graph-structure--note { color: $text-muted; }
        & > .graph-structure--finite { color: $success; }
        & > .graph-structure--nonfinite { color: $error; text-style: bold; }
    }
    """

    @dataclass
    class OpChosen(Message):
        """Jump to `neighbour`'s trace nearest the selected one (None: no trace)."""

        neighbour: Neighbour

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context: TraceContext | None = None
        self.note = "select a tensor in Graph Execution"
        self._rows: list[tuple[str, Neighbour | None]] = []
        # History rows: row -> (the tensor's name, its history); `_axis` their steps.
        self._histories: dict[int, tuple[str, TensorHistory]] = {}
        self._axis = np.empty(0, dtype=np.int64)

    def show_context(self, context: TraceContext | None, note: str = "") -> None:
        """Show the neighbourhood of `context`'s op (None: show `note`)."""
        self.context = context
        self.note = note or self.note
        rows: list[tuple[str, Neighbour | None]] = []
        histories: dict[int, tuple[str, TensorHistory]] = {}
        if context is not None and context.op is not None:
            rows.append((f"inputs ({len(context.inputs)})", None))
            rows.extend(("input", n) for n in context.inputs)
            rows.append(("selected", None))
            named = [(f"{context.op.name}:{context.trace.slot}", context.history)]
            named.extend((n.tensor_name, n.history) for n in context.inputs)
            for name, history in named:
                if history is not None:
                    histories[len(rows)] = (name, history)
                    rows.append(("history", None))
            rows.append((f"consumers ({len(context.consumers)})", None))
            rows.extend(("consumer", n) for n in context.consumers)
        self._rows = rows
        self._histories = histories
        self._axis = step_axis([history for _, history in histories.values()])
        self.sideways_offset = 0
        self.invalidate()
        self.set_row_count(max(1, len(rows)))
        first_input = 1 if context is not None and context.inputs else None
        self.move_cursor(
            first_input
            if first_input is not None
            else next((i for i, (kind, _) in enumerate(rows) if kind == "selected"), 0),
            center=True,
        )

    @property
    def selected_neighbour(self) -> Neighbour | None:
        if 0 <= self.cursor < len(self._rows):
            return self._rows[self.cursor][1]
        return None

    def render_row(self, row: int, width: int) -> Text:
        return self.shift_sideways(self._row_text(row))

    def _row_text(self, row: int) -> Text:
        if not self._rows or self.context is None or self.context.op is None:
            return Text(self.note, style=self.component_style("graph-structure--note"))
        kind, neighbour = self._rows[row]
        if kind == "selected":
            op = self.context.op
            text = Text("● ")
            text.append(literal(op.op_type) + " ", self.component_style("graph-structure--type"))
            text.append(literal(f"{op.name}:{self.context.trace.slot}"))
            if self.context.graph_name:
                text.append(literal(f"  in {self.context.graph_name}"))
            text.stylize(self.component_style("graph-structure--selected"))
            return text
        if kind == "history":
            return self._history_text(*self._histories[row])
        if neighbour is None:
            return Text(kind, style=self.component_style("graph-structure--heading"))
        arrow = "  ← " if kind == "input" else "  → "
        text = Text(arrow)
        op_type = neighbour.op.op_type if neighbour.op else "?"
        text.append(literal(op_type) + " ", self.component_style("graph-structure--type"))
        if kind == "input":
            text.append(literal(neighbour.tensor_name))
        else:
            text.append(literal(neighbour.tensor_name) + f" (input {neighbour.input_index})")
        text.append("  ")
        if neighbour.trace_index is not None:
            text.append(f"#{neighbour.trace_index} ")
            text.append_text(summary_text(neighbour.summary))
        else:
            text.append("not traced", self.component_style("graph-structure--note"))
        return text

    def _history_text(self, name: str, history: TensorHistory) -> Text:
        """ "  ·········▆█ Log:0 finite for steps 0-249, first non-finite at …"."""
        text = Text("  ")
        if self._axis.size:
            for glyph in history_cells(history, self._axis):
                text.append(
                    glyph,
                    self.component_style(
                        "graph-structure--finite"
                        if glyph in (FINITE, NO_TRACE)
                        else "graph-structure--nonfinite"
                    ),
                )
            text.append(" ")
        text.append(literal(name))
        text.append(" " + history.describe(), self.component_style("graph-structure--note"))
        return text

    def move_cursor(self, row: int, *, center: bool = False) -> None:
        # Skip headings: step onward in the direction of travel.
        if self._rows and 0 <= row < len(self._rows):
            step = 1 if row >= self.cursor else -1
            probe = row
            while (
                0 <= probe < len(self._rows)
                and self._rows[probe][1] is None
                and self._rows[probe][0] != "selected"
            ):
                probe += step
            if 0 <= probe < len(self._rows):
                row = probe
        super().move_cursor(row, center=center)

    def action_choose(self) -> None:
        neighbour = self.selected_neighbour
        if neighbour is not None:
            self.post_message(self.OpChosen(neighbour))


class GraphStructurePane(Pane):
    """Container of the graph structure list: border, title, zoomable."""

    CONTENT = GraphStructureList
    SECTION = Section("4", "graph-structure", "Graph Structure")
