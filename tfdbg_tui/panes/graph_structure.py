"""The Graph Structure pane: the selected op in bold, its inputs above, consumers below.

Each input and consumer row shows the summary of its trace nearest the selected one;
choosing a row (Enter) asks the screen to jump to that trace.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from tfdbg_tui.context_loader import Neighbour, TraceContext
from tfdbg_tui.literal import literal
from tfdbg_tui.summary_format import summary_text
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane


class GraphStructureList(LineList):
    """Rows: an "inputs" heading, the inputs, the selected op, "consumers", consumers."""

    BINDINGS = [
        Binding("enter", "choose", "Go to op's trace"),
        *LineList.SIDEWAYS_BINDINGS,
    ]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "graph-structure--heading", "graph-structure--selected", "graph-structure--type",
        "graph-structure--note"}

    DEFAULT_CSS = """
    GraphStructureList {
        & > .graph-structure--heading { color: $text-muted; text-style: italic; }
        & > .graph-structure--selected { text-style: bold; color: $text; background: $boost; }
        & > .graph-structure--type { color: $secondary; }
        & > .graph-structure--note { color: $text-muted; }
    }
    """

    class OpChosen(Message):
        """Jump to `neighbour`'s trace nearest the selected one (None: no trace)."""

        def __init__(self, neighbour: Neighbour) -> None:
            super().__init__()
            self.neighbour = neighbour

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context: TraceContext | None = None
        self.note = "select a tensor in Graph Execution"
        self._rows: list[tuple[str, Neighbour | None]] = []

    def show_context(self, context: TraceContext | None, note: str = "") -> None:
        """Show the neighbourhood of `context`'s op (None: show `note`)."""
        self.context = context
        self.note = note or self.note
        rows: list[tuple[str, Neighbour | None]] = []
        if context is not None and context.op is not None:
            rows.append((f"inputs ({len(context.inputs)})", None))
            rows.extend(("input", n) for n in context.inputs)
            rows.append(("selected", None))
            rows.append((f"consumers ({len(context.consumers)})", None))
            rows.extend(("consumer", n) for n in context.consumers)
        self._rows = rows
        self.sideways_offset = 0
        self.invalidate()
        self.set_row_count(max(1, len(rows)))
        first_input = 1 if context is not None and context.inputs else None
        self.move_cursor(first_input if first_input is not None else
                         next((i for i, (kind, _) in enumerate(rows) if kind == "selected"),
                              0), center=True)

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
            text.append(literal(op.op_type) + " ",
                        self.component_style("graph-structure--type"))
            text.append(literal(f"{op.name}:{self.context.trace.slot}"))
            if self.context.graph_name:
                text.append(literal(f"  in {self.context.graph_name}"))
            text.stylize(self.component_style("graph-structure--selected"))
            return text
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

    def move_cursor(self, row: int, *, center: bool = False) -> None:
        # Skip headings: step onward in the direction of travel.
        if self._rows and 0 <= row < len(self._rows):
            step = 1 if row >= self.cursor else -1
            probe = row
            while 0 <= probe < len(self._rows) and self._rows[probe][1] is None \
                    and self._rows[probe][0] != "selected":
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

    TITLE = "4 Graph Structure"
    CONTENT = GraphStructureList
    CONTENT_ID = "graph-structure"
