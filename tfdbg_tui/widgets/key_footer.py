"""`KeyFooter`: the footer of the app's screens, the keys that work now drawn as one
line of text (Textual's footer mounts a widget per key on every focus change); a
click presses a key, hovering shows its tooltip.

Textual's `Footer` is a container with a widget per key, rebuilt (mounted, styled and
laid out again) every time the screen publishes its bindings: twice per focus change
and five times while the debugger opens. On every pane key that rebuild was a fifth of
the app's CPU. This footer is one widget that draws a line of text: when the keys it
would show change it repaints, and otherwise does nothing.

It shows what Textual's footer shows, in its colours (the ``$footer-*`` variables):
each shown binding's key and description (one per action); keys of one
`Binding.Group` side by side before the group's description ("nN Match"); disabled
keys dim; the command palette's key at the right edge. A click on a key presses it;
hovering shows the binding's tooltip. What does not fit the width is cut at the right,
as the line of keys always puts the screen's own keys first.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class FooterEntry:
    """One item of the footer: one key, or the keys of a group, and what they do.

    ``keys`` holds (key, shown as, enabled, tooltip) for each key of the item.
    """

    keys: tuple[tuple[str, str, bool, str], ...]
    description: str
    grouped: bool = False

    @property
    def enabled(self) -> bool:
        return any(enabled for _, _, enabled, _ in self.keys)


def footer_entries(active_bindings: Any, key_display: Any) -> list[FooterEntry]:
    """The footer's items for a screen's ``active_bindings``, in binding order: one
    per action (its first binding), the keys of a group with more than one action
    joined into one item. ``key_display(binding)`` gives a key as the app shows it."""
    by_action: dict[str, tuple[Binding, bool, str]] = {}
    for _, binding, enabled, tooltip in active_bindings.values():
        if binding.show and binding.action not in by_action:
            by_action[binding.action] = (binding, enabled, tooltip)
    entries: list[FooterEntry] = []
    # Consecutive actions of one group; ungrouped ones (group None) each on their own.
    for group, run in groupby(by_action.values(), key=lambda member: member[0].group):
        members = list(run)
        if group is not None and len(members) > 1:
            keys = tuple(
                (b.key, key_display(b), enabled, tooltip or b.description)
                for b, enabled, tooltip in members
            )
            entries.append(FooterEntry(keys, group.description, grouped=True))
        else:
            for binding, enabled, tooltip in members:
                entries.append(
                    FooterEntry(
                        ((binding.key, key_display(binding), enabled, tooltip),),
                        binding.description,
                    )
                )
    return entries


class KeyFooter(Widget, can_focus=False):
    """The keys that work in the screen's focused widget and above it, on one line.

    Args:
        compact: Items separated by one space, keys without padding (the debugger's
            screens at 80 columns); otherwise each key is padded by a space.
        show_command_palette: Show the command palette's key at the right edge.
    """

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {
        "key-footer--key",
        "key-footer--description",
        "key-footer--hover",
        "key-footer--edge",
    }
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .key-footer--hover {
            background: $block-hover-background;
        }
        & > .key-footer--edge {
            color: $foreground 20%;
        }
    }
    """

    # Both repaint the line when they change (a reactive's default).
    compact: reactive[bool] = reactive(False)
    show_command_palette: reactive[bool] = reactive(True)

    def __init__(
        self,
        *,
        compact: bool = False,
        show_command_palette: bool = True,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.set_reactive(KeyFooter.compact, compact)
        self.set_reactive(KeyFooter.show_command_palette, show_command_palette)
        # What the line shows: the items, then the command palette's item or None.
        self._entries: list[FooterEntry] = []
        self._palette: FooterEntry | None = None
        # Where each key is on the line as last drawn: (start, end, key, enabled,
        # tooltip), for clicks and the tooltip.
        self._spans: list[tuple[int, int, str, bool, str]] = []
        self._hovered: int | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Any) -> None:
        if self.is_attached and screen is self.screen:
            # After the refresh, as Textual's footer does: the handler of a key that
            # moved the focus has then finished changing what is active.
            self.call_after_refresh(self._update_entries)

    def _update_entries(self) -> None:
        if not self.is_attached:
            return
        active = self.screen.active_bindings
        entries = footer_entries(active, self.app.get_key_display)
        palette = None
        if self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING in active:
            _, binding, enabled, tooltip = active[self.app.COMMAND_PALETTE_BINDING]
            palette = FooterEntry(
                (
                    (
                        binding.key,
                        self.app.get_key_display(binding),
                        enabled,
                        binding.tooltip or binding.description,
                    ),
                ),
                binding.description,
            )
        if entries != self._entries or palette != self._palette:
            self._entries, self._palette = entries, palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-footer--key", partial=True)
        description_style = self.get_component_rich_style("key-footer--description", partial=True)
        hover_style = self.get_component_rich_style("key-footer--hover", partial=True)
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, str, bool, str]] = []
        pad = "" if self.compact else " "

        def add(entry: FooterEntry) -> None:
            first = len(spans)
            for key, shown, enabled, tooltip in entry.keys:
                start = len(line)
                line.append(
                    pad + shown + ("" if entry.grouped else pad),
                    key_style + (Style(dim=True) if not enabled else Style()),
                )
                spans.append((start, len(line), key, enabled, tooltip))
            if entry.description:
                start = len(line)
                text = (" " if self.compact or entry.grouped else "") + entry.description
                line.append(
                    text + ("" if self.compact else " "),
                    description_style + (Style(dim=True) if not entry.enabled else Style()),
                )
                if not entry.grouped:
                    key, _, enabled, tooltip = entry.keys[0]
                    spans[first] = (spans[first][0], len(line), key, enabled, tooltip)
            for index in range(first, len(spans)):
                if index == self._hovered:
                    start, end = spans[index][:2]
                    line.stylize(hover_style, start, end)

        for entry in self._entries:
            add(entry)
            if self.compact:
                line.append(" ")
        palette = self._palette if self.show_command_palette else None
        if palette is not None:
            shown = palette.keys[0][1]
            tail = len(palette.description) + len(shown) + (3 if self.compact else 4)
            width = self.size.width
            if len(line) + tail <= width:
                line.append(" " * (width - len(line) - tail))
                line.append("▏", self.get_component_rich_style("key-footer--edge"))
                add(palette)
                if self.compact:
                    line.append(" ")
        self._spans = spans
        return line

    def _span_at(self, x: int) -> int | None:
        for index, (start, end, *_) in enumerate(self._spans):
            if start <= x < end:
                return index
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hovered = self._span_at(event.x)
        if hovered != self._hovered:
            self._hovered = hovered
            tooltip = self._spans[hovered][4] if hovered is not None else ""
            self.tooltip = tooltip or None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hovered is not None:
            self._hovered = None
            self.tooltip = None
            self.refresh()

    def on_click(self, event: events.Click) -> None:
        index = self._span_at(event.x)
        if index is None:
            return
        _, _, key, enabled, _ = self._spans[index]
        if enabled:
            self.app.simulate_key(key)
        else:
            self.app.bell()
