"""`LineList`: the virtual list with a cursor of every long list, built on Textual's
Line API.

Only the rows on screen are rendered, each from its index, so a list of ten million
rows costs what a list of ten costs. Rendered rows are cached in an LRU keyed by the
row, the width and a generation counter that `invalidate()` bumps when the data
changes.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.strip import Strip

from tfdbg_tui.widgets.cursor_view import CursorView, scroll_rows_to

# A screenful is at most a few hundred rows; 2048 cached strips cover several pages of
# scrolling back and forth at any terminal size without re-rendering.
STRIP_CACHE_SIZE = 2048
# Columns one Left/Right key scrolls a list's rows sideways (`SIDEWAYS_BINDINGS`).
SIDEWAYS_STEP = 8


class LineList(CursorView, can_focus=True):
    """A scrollable list of `row_count` rows with a cursor (`CursorView`, one row a
    line); subclasses render rows.

    Subclasses implement `render_row` and usually `cursor_changed`; they call
    `set_row_count` and `invalidate` when their data changes. A subclass whose rows
    can be longer than the pane adds `SIDEWAYS_BINDINGS` to its own and passes the
    part of a row that scrolls through `shift_sideways`.
    """

    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    SIDEWAYS_BINDINGS = [
        Binding("left", "scroll_sideways(-1)", "Scroll left", show=False),
        Binding("right", "scroll_sideways(1)", "Scroll right", show=False),
    ]

    COMPONENT_CLASSES = {"line-list--cursor", "line-list--cursor-blurred", "line-list--header"}

    DEFAULT_CSS = """
    LineList {
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        background: $surface;
        & > .line-list--cursor { background: $primary; color: $text; text-style: bold; }
        & > .line-list--cursor-blurred { background: $primary 40%; color: $text; }
        & > .line-list--header { text-style: bold; color: $text-muted; }
    }
    """

    header_height = 0
    """Rows at the top that stay in place when the list scrolls (see `render_header`)."""

    page_overlap = 1

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.row_count = 0
        self.sideways_offset = 0
        self._center_pending = False
        self._generation = 0
        self._strip_cache: LRUCache[tuple[object, ...], Strip] = LRUCache(STRIP_CACHE_SIZE)
        self._styles: dict[str, Style] = {}

    # -- data -----------------------------------------------------------------------------

    def render_row(self, row: int, width: int) -> Text:
        """The text of one row, at most `width` cells wide is enough."""
        raise NotImplementedError

    def render_header(self, y: int, width: int) -> Text:
        """The text of header line `y` (only when `header_height` > 0)."""
        return Text()

    def cursor_changed(self, row: int) -> None:
        """Called after the cursor moved to `row` (post a message here)."""

    def row_variant(self, row: int) -> object:
        """Anything else a row's look depends on (part of its cache key).

        A subclass that marks rows (e.g. highlighted inputs) returns the mark here and
        repaints just the rows whose mark changed, instead of invalidating everything.
        """
        return None

    def set_row_count(self, count: int) -> None:
        """Set the number of rows; the cursor stays on its row when it still exists."""
        if count == self.row_count:
            return
        self.row_count = count
        self.virtual_size = Size(self.size.width, count + self.header_height)
        if self.cursor >= count:
            self.set_reactive(LineList.cursor, max(0, count - 1))
        self.refresh()

    def invalidate(self) -> None:
        """Forget every rendered row (the data behind them changed) and repaint."""
        self._generation += 1
        self._strip_cache.clear()
        self.refresh()

    # -- rendering ------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y < self.header_height:
            header_key = (-1 - y, width, self._generation, 0)
            strip = self._strip_cache.get(header_key)
            if strip is None:
                strip = self._text_strip(
                    self.render_header(y, width), width, self.component_style("line-list--header")
                )
                self._strip_cache[header_key] = strip
            return strip
        row = self.scroll_offset.y + y - self.header_height
        if row >= self.row_count or row < 0 or width <= 0:
            return Strip.blank(max(0, width), self.rich_style)
        state = 0 if row != self.cursor else (2 if self.has_focus else 1)
        key = (row, width, self._generation, state, self.sideways_offset, self.row_variant(row))
        strip = self._strip_cache.get(key)
        if strip is None:
            strip = self._render_row_strip(row, width, state)
            self._strip_cache[key] = strip
        return strip.apply_offsets(0, row)

    def _render_row_strip(self, row: int, width: int, state: int) -> Strip:
        if not state:
            return self._text_strip(self.render_row(row, width), width, Style())
        cursor = self.component_style(
            "line-list--cursor" if state == 2 else "line-list--cursor-blurred"
        )
        # On the cursor row the cursor's text colour wins over the row's own colours
        # (cell backgrounds stay), so red alert text never sits on a dark cursor.
        return self._text_strip(
            self.render_row(row, width), width, cursor, foreground=Style(color=cursor.color)
        )

    def _text_strip(
        self, text: Text, width: int, style: Style, foreground: Style | None = None
    ) -> Strip:
        text.no_wrap = True
        text.end = ""
        text.truncate(width, overflow="ellipsis", pad=True)
        base = self.rich_style + style
        segments = []
        for seg in text.render(self.app.console):
            if not seg.text:
                continue
            seg_style = base + seg.style if seg.style else base
            if foreground is not None and foreground.color is not None:
                seg_style += foreground
            segments.append(Segment(seg.text, seg_style))
        return Strip(segments, width).crop_extend(0, width, base)

    def shift_sideways(self, text: Text) -> Text:
        """`text` without its first `sideways_offset` cells (the Left/Right scroll)."""
        return text[self.sideways_offset :] if self.sideways_offset else text

    def action_scroll_sideways(self, direction: int) -> None:
        """Scroll the rows `direction` steps right (+) or left (-)."""
        offset = max(0, self.sideways_offset + direction * SIDEWAYS_STEP)
        if offset != self.sideways_offset:
            self.sideways_offset = offset
            self.refresh()

    def reset_sideways_scroll(self) -> None:
        """Show the rows from their first column (zooming is for reading whole lines)."""
        if self.sideways_offset:
            self.sideways_offset = 0
            self.refresh()

    def component_style(self, name: str) -> Style:
        """The rich style of one of this widget's component classes (cached)."""
        style = self._styles.get(name)
        if style is None:
            style = self.get_component_rich_style(name, partial=True)
            if style.bgcolor is not None:
                # The partial style drops a background's alpha ("$primary 40%" would be
                # full $primary); the full style's background is blended over ours.
                style += Style(bgcolor=self.get_component_rich_style(name).bgcolor)
            self._styles[name] = style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self.invalidate()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """A scroll made before the scroll bar appeared (rows added in the same tick,
        `scroll_rows_to`) leaves the bar's thumb at the top: put it where the rows are."""
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self.row_count + self.header_height)
        if self._center_pending:
            self._scroll_cursor_to_middle()
        else:
            self.keep_cursor_visible()

    def refresh_row(self, row: int) -> None:
        """Repaint one row (cached strips of other states stay valid)."""
        self.refresh_position(row)

    def on_focus(self) -> None:
        self.refresh_row(self.cursor)

    def on_blur(self) -> None:
        self.refresh_row(self.cursor)

    # -- cursor ---------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_row(old)
        self.refresh_row(new)
        self.keep_cursor_visible()
        self.cursor_changed(new)

    @property
    def cursor_count(self) -> int:
        return self.row_count

    def go_to(self, position: int) -> None:
        self.move_cursor(position)

    def move_cursor(self, row: int, *, center: bool = False) -> None:
        """Put the cursor on `row` (clamped); `center` scrolls it to the middle.

        A centred row stays centred through layout changes (the first layout, a
        resize) until the cursor moves without `center`.
        """
        row = self.clamp_position(row)
        self._center_pending = center
        if center:
            self._scroll_cursor_to_middle(row)
        self.cursor = row

    def center_cursor(self) -> None:
        """Scroll the cursor row to the middle (the cursor itself stays)."""
        self._center_pending = True
        self._scroll_cursor_to_middle()

    def _scroll_cursor_to_middle(self, row: int | None = None) -> None:
        visible = self.visible_lines
        if visible <= 0:
            return  # not laid out yet: `on_resize` centres it
        row = self.cursor if row is None else row
        scroll_rows_to(self, max(0, row - visible // 2))

    @property
    def page_rows(self) -> int:
        """Rows one PageUp/PageDown moves."""
        return self.page_lines

    def action_cursor_up(self) -> None:
        self.action_move(-1)

    def action_cursor_down(self) -> None:
        self.action_move(1)

    def action_page_up(self) -> None:
        self.action_move_pages(-1)

    def action_page_down(self) -> None:
        self.action_move_pages(1)

    def action_first(self) -> None:
        self.action_to_end(0)

    def action_last(self) -> None:
        self.action_to_end(1)
