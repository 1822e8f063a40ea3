"""The footer of the app's screens: Textual's `Footer`, rebuilt only when the keys it
shows change.

Textual's footer rebuilds all its key widgets each time the screen publishes its
bindings, and a screen publishes them for every focus change (twice: the focus, then the
handlers' stack) and five times while the debugger opens, often with the same keys.
Each rebuild mounts and styles a widget per key: with two rebuilds, a pane key at 80x24
took a third more CPU than with the one its new keys need.
"""

from __future__ import annotations

from textual.widgets import Footer


class KeyFooter(Footer):
    """A `Footer` that skips a rebuild when what it would show is what it shows."""

    _shown: tuple | None = None
    """What the footer was last composed from (`_what_it_shows`); None: not yet."""

    def _what_it_shows(self) -> tuple:
        """Everything `Footer.compose` reads: its own settings and the screen's active
        bindings (a `Binding` is a frozen dataclass: equal when every field is)."""
        return (self._bindings_ready, self.compact, self.show_command_palette,
                self.combine_groups,
                tuple((binding, enabled, tooltip) for _, binding, enabled, tooltip
                      in self.screen.active_bindings.values()))

    async def recompose(self) -> None:
        if not self.is_attached:
            await super().recompose()
            return
        shown = self._what_it_shows()
        if shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
