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

# What stands where code is cut away: at the start of a row scrolled sideways, and in
# the marked line between its start and its expression.
CUT_MARK = "…"


def expression_offset(span: tuple[int, int], code_width: int) -> int:
    """The sideways offset of every line for an expression at columns ``span`` in
    ``code_width`` cells of code: 0, the lines from their start, unless the expression
    is as wide as the code; then it starts one column in, after the cut mark."""
    start, end = span
    return 0 if end - start < code_width else max(0, start - 1)


def marked_line_cut(span: tuple[int, int], code_width: int) -> int | None:
    """How many cells of its start the marked line keeps before `CUT_MARK` and its
    expression, when the expression at columns ``span`` ends past ``code_width`` cells
    of code but fits in them: the line's start and the whole expression both show.
    None when the line shows as it is (its expression ends in view, or is as wide as
    the code: then every line is shifted, `expression_offset`)."""
    start, end = span
    if end <= code_width or end - start >= code_width:
        return None
    return code_width - len(CUT_MARK) - (end - start)


class SourceCodeView(LineList):
    """The lines of one source file with line numbers; the marked line stands out.

    The lines show from their start. A marked expression that ends past the pane's edge
    is brought into view in its line alone, after the line's start and `CUT_MARK`;
    one wider than the pane shifts every line. Left and Right scroll the code sideways
    (the line numbers stay); a row scrolled sideways starts with `CUT_MARK`.
    """

    BINDINGS = [*LineList.SIDEWAYS_BINDINGS]

    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "source-code--marked",
        "source-code--gutter",
        "source-code--note",
        "source-code--expression",
        "source-code--cut",
    }

    DEFAULT_CSS = """
    SourceCodeView {
        & > .source-code--marked { background: $warning 50%; text-style: bold; }
        & > .source-code--expression {
            background: $error; color: $text; text-style: bold underline;
        }
        & > .source-code--gutter { color: $text-muted; }
        & > .source-code--note { color: $warning; }
        & > .source-code--cut { color: $text-muted; text-style: bold; }
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
            # A new marked line starts unshifted; `show_expression` shifts it if it must.
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
        """Scroll sideways only when the marked line's expression is as wide as the
        code (`expression_offset`; a narrower one is brought into view in its line,
        `marked_line_cut`). Called on every show and resize (a zoom, a terminal
        resize): the new width decides afresh. Without an expression the offset is
        only cut back so that the longest line's end stays in view.
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

    def _code_shown(self, code: Text, span: tuple[int, int] | None, code_width: int) -> Text:
        """The part of a line a row shows: from its start; scrolled sideways, after
        `CUT_MARK`; the marked line (``span``: its expression) cut between its start and
        its expression when that ends past the edge (`marked_line_cut`)."""
        mark = Text(CUT_MARK, style=self.component_style("source-code--cut"))
        if self.sideways_offset:
            shifted = self.shift_sideways(code)
            return mark + shifted[len(CUT_MARK) :] if code.cell_len else shifted
        kept = marked_line_cut(span, code_width) if span is not None else None
        if span is None or kept is None:
            return code
        return code[:kept] + mark + code[span[0] :]

    @staticmethod
    def _note_rows(view: SourceView) -> list[str]:
        return [
            "No source text in the dump for this frame:",
            view.note or "the dump holds no snapshot of this file",
            f"{view.path}",
            f"line {view.line}",
        ]

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
            return literal_text(
                note_rows[row] if row < len(note_rows) else "",
                style=self.component_style("source-code--note"),
            )
        number = row + 1
        marked = number == view.line
        gutter = Text(
            ("▶" if marked else " ") + str(number).rjust(self._gutter_width(view) - 2) + " ",
            style=self.component_style("source-code--gutter"),
        )
        code = view.lines[row]
        if marked and view.span is not None:
            code = code.copy()
            code.stylize(self.component_style("source-code--expression"), *view.span)
        text = gutter + self._code_shown(
            code, view.span if marked else None, width - gutter.cell_len - 1
        )
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
