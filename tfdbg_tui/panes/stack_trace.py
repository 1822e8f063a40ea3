"""The Stack Trace pane: the creation stack of a graph op or the call stack of an
eager execution, outermost call first, the user's own frames standing out."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.message import Message

from reader.model import Frame
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane, PaneCommand, Section


class StackTraceList(LineList):
    """Frames, one row each: `file:line  expression  function  path`; library frames
    dimmed or hidden. The expression (a user frame's exact call) shows when known."""

    BINDINGS = [
        Binding("l", "toggle_library", "Library frames"),
        Binding("enter", "choose", "Show source", show=False),
    ]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "stack-trace--user",
        "stack-trace--library",
        "stack-trace--function",
        "stack-trace--note",
        "stack-trace--expression",
    }

    DEFAULT_CSS = """
    StackTraceList {
        & > .stack-trace--user { color: $text; text-style: bold; }
        & > .stack-trace--library { color: $text-disabled; }
        & > .stack-trace--function { color: $secondary; }
        & > .stack-trace--note { color: $text-muted; }
        & > .stack-trace--expression { color: $warning; }
    }
    """

    @dataclass
    class FrameSelected(Message):
        """The cursor is on a frame: Source Code should show its file and line."""

        frame: Frame

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.frames: list[Frame] = []
        self.hide_library = False
        self.note = "nothing selected"
        self._shown: list[Frame] = []
        self.expressions: dict[int, str] = {}  # frame id -> its exact expression

    def show_frames(
        self,
        frames: list[Frame],
        selected: Frame | None,
        note: str = "",
        expressions: tuple[str | None, ...] = (),
    ) -> None:
        """Show `frames` (outermost first) with the cursor on `selected`; `expressions`
        gives, per frame, its exact expression when known."""
        self.frames = list(frames)
        self.expressions = {
            frame.id: text for frame, text in zip(frames, expressions) if text is not None
        }
        self.note = note or "no stack recorded"
        self._relist(selected)

    def _relist(self, selected: Frame | None) -> None:
        self._shown = [f for f in self.frames if f.is_user or not self.hide_library]
        if not self._shown and self.frames:
            self._shown = list(self.frames)
        self.invalidate()
        self.set_row_count(max(1, len(self._shown)))
        if selected is not None and selected in self._shown:
            self.move_cursor(self._shown.index(selected), center=True)
        elif self._shown:
            self.move_cursor(len(self._shown) - 1, center=True)

    @property
    def selected_frame(self) -> Frame | None:
        if 0 <= self.cursor < len(self._shown):
            return self._shown[self.cursor]
        return None

    def cursor_changed(self, row: int) -> None:
        frame = self.selected_frame
        if frame is not None:
            self.post_message(self.FrameSelected(frame))

    def render_row(self, row: int, width: int) -> Text:
        if not self._shown:
            return Text(self.note, style=self.component_style("stack-trace--note"))
        frame = self._shown[row]
        style = self.component_style(
            "stack-trace--user" if frame.is_user else "stack-trace--library"
        )
        marker = "▸ " if frame.is_user else "  "
        path = literal(frame.path)
        text = Text(marker, style=style)
        location = f"{path.rsplit('/', 1)[-1]}:{frame.line}"
        text.append(location, style)
        expression = self.expressions.get(frame.id)
        if expression is not None:
            # Before the function: the exact call is what a narrow pane should keep.
            text.append("  ")
            text.append(literal(expression), self.component_style("stack-trace--expression"))
        text.append("  ")
        text.append(
            literal(frame.function),
            self.component_style("stack-trace--function") if frame.is_user else style,
        )
        text.append("  " + path, self.component_style("stack-trace--library"))
        return text

    def action_toggle_library(self) -> None:
        self.hide_library = not self.hide_library
        self._relist(self.selected_frame)
        if isinstance(self.parent, Pane):
            self.parent.set_title_suffix(" (user frames)" if self.hide_library else "")

    def action_choose(self) -> None:
        self.cursor_changed(self.cursor)


class StackTracePane(Pane):
    """Container of the stack frame list: border, title, zoomable."""

    CONTENT = StackTraceList
    SECTION = Section("6", "stack-trace", "Stack Trace")
    COMMANDS = (PaneCommand("toggle_library", "Hide/show library frames"),)
