"""The Python Execution Timeline pane: one cell per eager execution, wrapped in rows.

Each cell is the first letter of the op type or function name; function calls are
drawn reversed, alert cells red. Where a circular buffer did not keep executions,
one gap cell ("…") stands for them (`tfdbg_tui.models.kept_rows`). A Line API widget: only
visible rows are read, a row at a time, so millions of executions cost nothing until
shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Static

from reader import Run
from reader import format as fmt
from tfdbg_tui.models.context_loader import ExecutionContext
from tfdbg_tui.models.kept_rows import KeptRows
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.rich_literal import literal_text
from tfdbg_tui.text.summary_format import summary_text
from tfdbg_tui.widgets.cursor_view import CursorView
from tfdbg_tui.widgets.pane import Pane, Section

ROW_CACHE_SIZE = 512
# The cell that stands for executions not kept.
GAP_CELL = "…"


def execution_letter(op_type: str) -> str:
    """The cell's letter: the first letter of the op or function name."""
    for char in fmt.function_base_name(op_type):
        if char.isalnum():
            return char
    return "?"


# One line of cells: each cell's op type (None: a gap cell), whether it is an alert,
# whether it is a function call.
_RowData = tuple[list[str | None], list[bool], list[bool]]


class TimelineCells(CursorView, can_focus=True):
    """The cells: cell `r * width + c` (`KeptRows` row) is drawn at row r, column c
    (the cursor's positions, `width` to a line)."""

    BINDINGS = [
        Binding("left", "move(-1)", "Prev", show=False),
        Binding("right", "move(1)", "Next", show=False),
        Binding("up", "move_lines(-1)", "Row up", show=False),
        Binding("down", "move_lines(1)", "Row down", show=False),
        Binding("pageup", "move_pages(-1)", "Page up", show=False),
        Binding("pagedown", "move_pages(1)", "Page down", show=False),
        Binding("home", "to_end(0)", "First", show=False),
        Binding("end", "to_end(1)", "Last", show=False),
    ]

    COMPONENT_CLASSES = {
        "timeline--function",
        "timeline--alert",
        "timeline--cursor",
        "timeline--cursor-blurred",
        "timeline--op",
        "timeline--gap",
    }

    DEFAULT_CSS = """
    TimelineCells {
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        background: $surface;
        & > .timeline--op { color: $text-muted; }
        & > .timeline--gap { color: $warning; text-style: bold; }
        & > .timeline--function { color: $background; background: $primary; text-style: bold; }
        & > .timeline--alert { color: $text; background: $error; text-style: bold; }
        & > .timeline--cursor {
            color: $background; background: $foreground; text-style: bold underline;
        }
        & > .timeline--cursor-blurred {
            color: $background; background: $foreground 50%; text-style: underline;
        }
    }
    """

    @dataclass
    class ExecutionSelected(Message):
        """The cursor is on an execution."""

        execution_index: int

    @dataclass
    class GapSelected(Message):
        """The cursor is on a gap: executions ``begin..end-1`` are not kept."""

        begin: int
        end: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.reader: Run | None = None
        self.cells = KeptRows([])
        self._generation = 0
        self._rows: LRUCache[tuple[int, int, int], _RowData] = LRUCache(ROW_CACHE_SIZE)

    def attach(self, reader: Run) -> None:
        """Show the executions of the run `reader`."""
        self.reader = reader
        self.data_changed()

    def data_changed(self) -> None:
        """Executions were appended: recount and repaint."""
        if self.reader is None:
            return
        self.cells = KeptRows(self.reader.kept_executions())
        self._generation += 1
        self._rows.clear()
        self._resize_virtual()
        self.refresh()

    @property
    def count(self) -> int:
        """Cells: kept executions and gaps."""
        return self.cells.count

    @property
    def first_execution(self) -> int | None:
        """The first execution on disk, or None."""
        return self.cells.index_at(0) if self.count else None

    def holds(self, index: int) -> bool:
        """Whether execution `index` is on disk (has a cell of its own)."""
        row = self.cells.row_of(index)
        return row is not None and self.cells.index_at(row) == index

    @property
    def _width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    @property
    def cursor_count(self) -> int:
        return self.count

    @property
    def positions_per_line(self) -> int:
        return self._width

    def _resize_virtual(self) -> None:
        rows = (self.count + self._width - 1) // self._width
        self.virtual_size = Size(self._width, rows)

    def on_resize(self, event: events.Resize) -> None:
        self._rows.clear()
        self._resize_virtual()
        self.keep_cursor_visible()

    def _row_data(self, row: int, width: int) -> _RowData:
        key = (row, width, self._generation)
        data = self._rows.get(key)
        if data is None:
            assert self.reader is not None  # no cells without one
            op_types: list[str | None] = []  # None: a gap cell
            alerts: list[bool] = []
            functions: list[bool] = []
            for part in self.cells.index_ranges(row * width, min((row + 1) * width, self.count)):
                if isinstance(part, int):
                    op_types.append(None)
                    alerts.append(False)
                    functions.append(False)
                    continue
                begin, end = part
                op_types.extend(self.reader.execution_op_types(begin, end))
                alerts.extend(self.reader.execution_alert_flags(begin, end))
                functions.extend(self.reader.execution_function_flags(begin, end))
            data = (op_types, alerts, functions)
            self._rows[key] = data
        return data

    def render_line(self, y: int) -> Strip:
        width = self._width
        row = self.scroll_offset.y + y
        base = self.rich_style
        if self.reader is None or row * width >= self.count:
            return Strip.blank(self.size.width, base)
        op_types, alerts, functions = self._row_data(row, width)
        op_style = base + self.get_component_rich_style("timeline--op")
        function_style = base + self.get_component_rich_style("timeline--function")
        alert_style = base + self.get_component_rich_style("timeline--alert")
        gap_style = base + self.get_component_rich_style("timeline--gap")
        cursor_style = base + self.get_component_rich_style(
            "timeline--cursor" if self.has_focus else "timeline--cursor-blurred"
        )
        cursor_column = self.cursor - row * width
        segments = []
        for column, op_type in enumerate(op_types):
            if op_type is None:
                style, letter = gap_style, GAP_CELL
            else:
                style = (
                    alert_style
                    if alerts[column]
                    else (function_style if functions[column] else op_style)
                )
                letter = literal(execution_letter(op_type))
            if column == cursor_column:
                style = style + cursor_style
            segments.append(Segment(letter, style))
        return Strip(segments).crop_extend(0, self.size.width, base)

    # -- cursor ---------------------------------------------------------------------------

    def select_execution(self, index: int) -> None:
        """Move the cursor to execution `index` (one not kept: its gap's cell)."""
        self.move_to(self._cell_of(index))

    def _cell_of(self, index: int) -> int:
        cell = self.cells.row_of(index)
        if cell is None:  # before or after everything on disk
            cell = 0 if self.count and index < (self.first_execution or 0) else self.count - 1
        return cell

    @property
    def selected_execution(self) -> int | None:
        """The execution under the cursor; None on a gap cell."""
        return self.cells.index_at(self.cursor) if self.count else None

    def sync_to_execution(self, index: int) -> bool:
        """Show execution `index` under the cursor without announcing a selection
        (another pane's selection ran in it); False when it is there already or not
        on disk (no cell of its own)."""
        if not self.holds(index) or self.selected_execution == index:
            return False
        position = self._cell_of(index)
        old = self.cursor
        self.set_reactive(TimelineCells.cursor, position)
        self.refresh_position(old)
        self.refresh_position(position)
        self.keep_cursor_visible()
        return True

    def move_to(self, position: int) -> None:
        """Put the cursor on cell `position` (clamped), announcing what is there."""
        if not self.count:
            return
        self.cursor = self.clamp_position(position)

    def go_to(self, position: int) -> None:
        self.move_to(position)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_position(old)
        self.refresh_position(new)
        self.keep_cursor_visible()
        if not self.count:
            return
        index = self.cells.index_at(new)
        if index is not None:
            self.post_message(self.ExecutionSelected(index))
        else:
            gap = self.cells.gap_at(new)
            if gap is not None:
                self.post_message(self.GapSelected(*self.cells.missing(gap)))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


def execution_detail(context: ExecutionContext | None, note: str = "") -> Text:
    """The selected execution: op or function, each output's summary, then each input
    with the execution that produced it (outputs first: a short pane shows them)."""
    if context is None:
        return Text(note or "no eager executions", style="dim")
    execution = context.execution
    text = Text(f"#{execution.index} ", style="bold")
    text.append_text(literal_text(execution.op_type, "bold"))
    if execution.is_function:
        text.append("  function call")
        if context.graph_name:
            text.append_text(literal_text(f" of graph {context.graph_name}"))
    if execution.thread is not None:
        text.append("  in thread ")
        text.append_text(literal_text(execution.thread, "bold"))
    for slot, dtype in enumerate(execution.output_dtypes):
        text.append(f"\n out {slot}: ")
        summary = execution.summary(slot)
        if summary is None:
            text.append(dtype)
        else:
            text.append_text(summary_text(summary))
    for position, eager_input in enumerate(context.inputs):
        text.append(f"\n in {position}: ")
        if eager_input.producer_index is not None:
            text.append(f"from #{eager_input.producer_index} ")
            text.append_text(literal_text(f"{eager_input.producer_op_type}:{eager_input.slot}"))
            text.append(" ")
            text.append_text(summary_text(eager_input.summary))
        elif context.earlier_dropped:
            text.append(
                "input data, a constant, or the output of an execution no longer kept",
                style="italic",
            )
        else:
            text.append("input data or a constant (no recorded op made it)", style="italic")
    return text


class TimelinePane(Pane):
    """The cells above a detail of the selected execution; zoomable."""

    CONTENT = TimelineCells
    SECTION = Section("2", "timeline", "Python Execution Timeline")

    DEFAULT_CSS = """
    TimelinePane > #timeline-detail { height: auto; max-height: 50%; }
    """

    def compose(self):
        yield from super().compose()
        yield Static(Text("no eager executions", style="dim"), id="timeline-detail")

    def show_detail(self, context: ExecutionContext | None, note: str = "") -> None:
        """Show the detail of the selected execution."""
        self.query_one("#timeline-detail", Static).update(execution_detail(context, note))
