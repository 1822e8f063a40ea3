"""The `e` screen: the whole diagnosis of the selected alert, with its evidence."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from reader.analysis.diagnosis.diagnosis import Diagnosis
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.diagnosis_line import diagnosis_text


class DiagnosisScreen(ModalScreen[None]):
    """The diagnosis line in full: explanation, fix and evidence; Esc, q or e closes."""

    BINDINGS = [Binding("escape,q,e", "dismiss", "Close")]

    DEFAULT_CSS = """
    DiagnosisScreen { align: center middle; }
    DiagnosisScreen > VerticalScroll {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        border: round $error; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.diagnosis = diagnosis

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "Diagnosis"
            alert = self.diagnosis.alert
            if alert is not None:
                name = f"{alert.op_name}:{alert.slot}" if alert.op_name else f"{alert.slot}"
                scroll.border_subtitle = Text(literal(
                    f"{alert.op_type} {name}, {alert.kind} #{alert.index}, step {alert.step}"))
            yield Static(diagnosis_text(self.diagnosis, full=True), id="diagnosis-text")
