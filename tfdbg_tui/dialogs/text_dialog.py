"""The `!` screen: every notice the writer recorded about the run, warnings first."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from reader.notices import Notice
from tfdbg_tui.text.literal import literal


def notices_text(notices: tuple[Notice, ...] | list[Notice]) -> Text:
    """The notices as shown: warnings first, each with its level, message and details."""
    text = Text()
    if not notices:
        text.append("The writer recorded no notices: nothing of the program was left out.")
        return text
    ordered = sorted(notices, key=lambda n: not n.is_warning)
    for notice in ordered:
        if notice.is_warning:
            text.append("⚠ warning ", "bold black on yellow")
        else:
            text.append("info ", "bold cyan")
        text.append(literal(notice.kind), "dim")
        text.append("\n")
        text.append(literal(notice.message) + "\n")
        for key, value in notice.details.items():
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            text.append(f"  {literal(key)}: ", "dim")
            text.append(literal(shown) + "\n", "dim")
        text.append("\n")
    return text


class NoticesScreen(ModalScreen[None]):
    """The run's notices in full; Esc, q or ! closes it."""

    BINDINGS = [Binding("escape,q,exclamation_mark", "dismiss", "Close")]

    DEFAULT_CSS = """
    NoticesScreen { align: center middle; }
    NoticesScreen > VerticalScroll {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        border: round $warning; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, notices: tuple[Notice, ...]) -> None:
        super().__init__()
        self.notices = notices

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = f"Notices ({len(self.notices)})"
            yield Static(notices_text(self.notices), id="notices-text")
