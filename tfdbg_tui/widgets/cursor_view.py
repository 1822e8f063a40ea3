"""`CursorView`: a `ScrollView` with a cursor (move, keep visible, page, click) over
positions laid out in lines: the one cursor of every long list (`LineList`, one row
per line) and of the timeline (cells wrapped in lines).

Position ``p`` sits on line ``p // positions_per_line``, below `header_height` lines
that stay in place. This class moves the cursor, keeps its line on screen and pages;
subclasses say how many positions there are and what a move announces.
"""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual.scroll_view import ScrollView


def scroll_rows_to(view: ScrollView, top: int) -> None:
    """Scroll `view` so row `top` is its first visible row, now and without animation.

    Forced: rows added in this same tick have no scroll bar yet (it appears at the
    next layout), and Textual drops an unforced scroll then; a selection made in the
    tick that filled a list would stay off screen until the next key.
    """
    view.scroll_to(y=top, animate=False, immediate=True, force=True)


class CursorView(ScrollView, can_focus=True):
    """A cursor over `cursor_count` positions, `positions_per_line` to a line.

    Subclasses implement `cursor_count` and `go_to` (which sets `cursor`, clamped
    with `clamp_position`), and watch `cursor` to repaint and announce.
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False, init=False)

    header_height = 0
    """Lines at the top that stay in place when the view scrolls."""

    page_overlap = 0
    """Lines of the last page that a page move keeps on screen."""

    @property
    def cursor_count(self) -> int:
        """How many positions the cursor can take."""
        raise NotImplementedError

    @property
    def positions_per_line(self) -> int:
        return 1

    def go_to(self, position: int) -> None:
        """Put the cursor on `position` (the move keys end here)."""
        raise NotImplementedError

    def clamp_position(self, position: int) -> int:
        """`position` within the positions there are (0 when there are none)."""
        count = self.cursor_count
        return max(0, min(position, count - 1)) if count else 0

    def line_of(self, position: int) -> int:
        """The line (below the header) that shows `position`."""
        return position // self.positions_per_line

    @property
    def visible_lines(self) -> int:
        """Lines of positions the view shows at once (0 before the first layout)."""
        return self.scrollable_content_region.height - self.header_height

    @property
    def page_lines(self) -> int:
        """Lines one page move goes."""
        return max(1, self.visible_lines - self.page_overlap)

    def refresh_position(self, position: int) -> None:
        """Repaint the line of `position`."""
        self.refresh_line(self.line_of(position) + self.header_height)

    def keep_cursor_visible(self) -> None:
        """Scroll just enough that the cursor's line is on screen."""
        height = self.visible_lines
        if height <= 0:
            return
        line = self.line_of(self.cursor)
        top = round(self.scroll_y)
        if line < top:
            scroll_rows_to(self, line)
        elif line >= top + height:
            scroll_rows_to(self, line - height + 1)

    def position_at(self, x: int, y: int) -> int | None:
        """The position drawn at `x`, `y` of the view, or None."""
        line = self.scroll_offset.y + y - self.header_height
        if line < 0:
            return None
        per_line = self.positions_per_line
        position = line * per_line + (x if per_line > 1 else 0)
        return position if 0 <= position < self.cursor_count else None

    def action_move(self, positions: int) -> None:
        self.go_to(self.cursor + positions)

    def action_move_lines(self, lines: int) -> None:
        self.go_to(self.cursor + lines * self.positions_per_line)

    def action_move_pages(self, pages: int) -> None:
        self.action_move_lines(pages * self.page_lines)

    def action_to_end(self, last: int) -> None:
        self.go_to(self.cursor_count - 1 if last else 0)

    def on_click(self, event: events.Click) -> None:
        position = self.position_at(event.x, event.y)
        if position is not None:
            self.go_to(position)
