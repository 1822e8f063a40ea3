"""The Source Code pane: the dump's snapshot of a source file, one line marked.

The text is the snapshot the instrumentation stored in the dump (the file may have
changed on disk since, or live on another host). Highlighting is done by
`tfdbg_tui.models.source_view.highlight_source` in a worker; the pane only draws the
lines it is given.
"""

from __future__ import annotations

from rich.text import Text
from textual import events

from tfdbg_tui.models.source_view import SourceView
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.rich_literal import literal_text
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane, Section

# Columns of code kept in view left of the expression when the line must scroll to it.
SPAN_CONTEXT_COLUMNS = 4


def expression_offset(span: tuple[int, int], code_width: int) -> int:
    """The sideways offset that shows columns ``span`` in ``code_width`` cells of code.

    The smallest shift that shows the whole expression with `SPAN_CONTEXT_COLUMNS` of
    code before it (0 when the line shows it unshifted); an expression wider than the
    pane starts one column in, so its start is in view.
    """
    start, end = span
    if end - start + SPAN_CONTEXT_COLUMNS <= code_width:
        return max(0, min(start - SPAN_CONTEXT_COLUMNS, end - code_width))
    return max(0, start - 1)


class SourceCodeView(LineList):
    """The lines of one source file with line numbers; the marked line stands out.

    Left and Right scroll the code sideways (the line numbers stay), for long lines
    in a narrow pane.
    """

    BINDINGS = [*LineList.SIDEWAYS_BINDINGS]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "source-code--marked", "source-code--gutter", "source-code--note",
        "source-code--expression"}

    DEFAULT_CSS = """
    SourceCodeView {
        & > .source-code--marked { background: $warning 50%; text-style: bold; }
        & > .source-code--expression {
            background: $error; color: $text; text-style: bold underline;
        }
        & > .source-code--gutter { color: $text-muted; }
        & > .source-code--note { color: $warning; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: SourceView | None = None

    def show(self, view: SourceView) -> None:
        """Show `view` with its marked line centred and its expression in view."""
        previous = self.view
        self.view = view
        if previous is None or previous.lines is not view.lines or previous.path != view.path:
            self.sideways_offset = 0
            self.invalidate()
        elif previous.line != view.line or previous.span != view.span:
            # A new marked line starts unshifted; `show_expression` shifts it if need be.
            self.sideways_offset = 0
            self.refresh()
        rows = len(view.lines) if view.lines is not None else len(self._note_rows(view))
        self.set_row_count(rows)
        if view.lines is not None:
            self.move_cursor(view.line - 1, center=True)
            self.show_expression()
        else:
            self.move_cursor(0)

    def show_expression(self) -> None:
        """Scroll sideways so the marked line's expression is in view, no further than
        it needs (`expression_offset`). Called on every show and resize (a zoom, a
        terminal resize): the new width decides afresh. Without an expression the
        offset is only cut back so that the longest line's end stays in view.
        """
        view = self.view
        if view is None or view.lines is None:
            return
        code_width = self._code_width(view)
        if code_width <= 0:
            return  # not laid out yet: `on_resize` comes back here
        if view.span is not None:
            offset = expression_offset(view.span, code_width)
        elif not self.sideways_offset:
            return
        else:
            longest = max((line.cell_len for line in view.lines), default=0)
            offset = min(self.sideways_offset, max(0, longest - code_width))
        if offset != self.sideways_offset:
            self.sideways_offset = offset
            self.refresh()

    def reset_sideways_scroll(self) -> None:
        """Show the lines from their first column, unless the marked expression needs a
        shift to be in view (zooming: the new width decides, in `on_resize`)."""
        self.sideways_offset = 0
        self.refresh()
        self.show_expression()

    def on_resize(self, event: events.Resize) -> None:
        super().on_resize(event)
        self.show_expression()

    def _code_width(self, view: SourceView) -> int:
        """Cells of code a row shows: the pane less the gutter, the scroll bar and the
        cut line's "…". The scroll bar counts as soon as the rows overflow: it appears
        only at the next layout, which sends no resize."""
        width = self.size.width
        if self.row_count > self.size.height:
            width -= self.styles.scrollbar_size_vertical
        return width - self._gutter_width(view) - 1

    @staticmethod
    def _gutter_width(view: SourceView) -> int:
        """Cells of the "▶123 " gutter before the code."""
        return len(str(len(view.lines or ()))) + 2

    @staticmethod
    def _note_rows(view: SourceView) -> list[str]:
        return ["No source text in the dump for this frame:",
                view.note or "the dump holds no snapshot of this file",
                f"{view.path}", f"line {view.line}"]

    def row_variant(self, row: int) -> object:
        if self.view is None or row + 1 != self.view.line:
            return False
        return self.view.span or True

    def render_row(self, row: int, width: int) -> Text:
        view = self.view
        if view is None:
            return Text()
        if view.lines is None:
            note_rows = self._note_rows(view)
            return literal_text(note_rows[row] if row < len(note_rows) else "",
                                style=self.component_style("source-code--note"))
        number = row + 1
        marked = number == view.line
        gutter = Text(("▶" if marked else " ") + str(number).rjust(self._gutter_width(view) - 2)
                      + " ",
                      style=self.component_style("source-code--gutter"))
        code = view.lines[row]
        if marked and view.span is not None:
            code = code.copy()
            code.stylize(self.component_style("source-code--expression"), *view.span)
        text = gutter + self.shift_sideways(code)
        if marked:
            # The mark spans the pane; a longer line keeps its "…" at the edge.
            text.pad_right(max(0, width - text.cell_len))
            text.stylize_before(self.component_style("source-code--marked"))
        return text


class SourceCodePane(Pane):
    """Container of the Source Code view: border, title (the file), zoomable."""

    CONTENT = SourceCodeView
    SECTION = Section("5", "source-code", "Source Code")

    def show(self, view: SourceView) -> None:
        """Show `view`; the title names the file and says the text is a snapshot."""
        suffix = Text(" ")
        suffix.append(literal(view.path.rsplit("/", 1)[-1]) + f":{view.line}", "bold")
        if view.lines is not None:
            suffix.append(" (snapshot)")
        self.set_title_suffix(suffix)
        self.query_one(SourceCodeView).show(view)
