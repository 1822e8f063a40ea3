"""The `v` view (modal, the whole screen): one tensor's value (FULL_TENSOR dumps), its
histogram, then its elements."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from tfdbg_tui.panes.tensor_value import TensorValueList
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.key_footer import KeyFooter
from tfdbg_tui.widgets.trend_charts import ValueHistogram


class TensorValueScreen(ModalScreen[None]):
    """Shows `value`, scrollable; Esc or q closes it.

    Args:
        title: The tensor, e.g. ``#1234 Log:0``.
        value: The tensor's value as a numpy array.
    """

    BINDINGS = [Binding("escape,q", "close", "Close")]

    DEFAULT_CSS = """
    TensorValueScreen { background: $background; }
    TensorValueScreen > #value-title { height: 1; text-style: bold; }
    """

    def __init__(self, title: str, value) -> None:
        super().__init__()
        self.title_text = title
        self.value = value

    def compose(self) -> ComposeResult:
        yield Static(Text("Value of " + literal(self.title_text)), id="value-title")
        yield ValueHistogram(self.value, id="value-histogram")
        yield TensorValueList(self.value, id="tensor-value")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(TensorValueList).focus()

    def action_close(self) -> None:
        self.dismiss(None)
