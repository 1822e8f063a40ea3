"""`PromptDialog`: a one-line prompt (go to a trace, search, the run to compare with),
dismissed with the text or None."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptDialog(ModalScreen[str | None]):
    """Asks for one line of text; Enter returns it, Escape returns None.

    Args:
        title: What is asked.
        placeholder: A hint shown in the empty input.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    PromptDialog { align: center middle; }
    PromptDialog > Vertical {
        width: 60; max-width: 100%; height: auto;
        border: round $accent; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, title: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, markup=False)
            yield Input(placeholder=self.placeholder, id="prompt-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
