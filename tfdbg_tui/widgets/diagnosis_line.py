"""The diagnosis line: why the selected alert's tensor went non-finite, and the fix.

One line above the panes. On opening it diagnoses the root cause; selecting an alert
diagnoses that alert. The text comes from `reader.analysis.diagnosis.diagnosis`, the
pattern's label from its rule (`reader.analysis.diagnosis.registry`); this widget only
formats them. A line too long for the screen is cut and ends in a "more" hint:
`e` (or a click) shows the whole diagnosis with its evidence
(`tfdbg_tui.dialogs.text_dialog`).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.analysis.diagnosis.registry import CONTAINED, VERDICTS, label_of
from tfdbg_tui.text.literal import literal

# Diagnoses that say no harm was done: shown on the calm background.
CLEAR_PATTERNS = tuple(rule.pattern for rule in (*VERDICTS, CONTAINED))

# Ends a line cut at the screen's edge: the key that shows all of it.
MORE_HINT = " e: more "


def diagnosis_text(
    diagnosis: Diagnosis,
    *,
    full: bool = False,
    proof: str | None = None,
    values: tuple[str, ...] = (),
) -> Text:
    """The diagnosis as one line (label, explanation, "Fix:" suggestion); with `full`,
    the fix, its proof (``proof``, when given), the op's values (``values``: where they
    were kept, then a line per tensor) and the evidence follow in paragraphs of their
    own."""
    text = Text(no_wrap=not full, overflow="ellipsis", end="")
    label = label_of(diagnosis.pattern)
    text.append(f" {label} ", "bold reverse")
    text.append(" ")
    text.append(literal(diagnosis.explanation))
    text.append("\n\nFix: " if full else "  Fix: ", "bold")
    text.append(literal(diagnosis.suggestion))
    if full and diagnosis.chain:
        text.append("\n\nChain", "bold")
        text.append(" (u steps along it):", "dim")
        for number, link in enumerate(diagnosis.chain, 1):
            text.append(f"\n  {number}. ")
            text.append(literal(link.subject), "bold")
            text.append(literal(f" [{link.op_type}]: {link.why}"))
    elif full and diagnosis.chain_note:
        text.append("\n\nChain: ", "bold")
        text.append(literal(diagnosis.chain_note))
    if full and proof is not None:
        text.append("\n\nProof: ", "bold")
        text.append(literal(proof))
    if full and values:
        text.append("\n\nValues: ", "bold")
        text.append(literal(values[0]))
        for line in values[1:]:
            text.append("\n  " + literal(line))
    if full:
        text.append("\n\nEvidence:", "bold")
        for line in diagnosis.evidence:
            text.append("\n  " + literal(line))
        text.append(f"\n\npattern: {literal(diagnosis.pattern)}", "italic")
    return text


class DiagnosisLine(Widget):
    """One line above the panes, under the status line: the selected alert's diagnosis."""

    DEFAULT_CSS = """
    DiagnosisLine {
        height: 1; background: $error 15%;
    }
    DiagnosisLine.-clear { background: $success 10%; }
    """

    class Chosen(Message):
        """The line was clicked: show the whole diagnosis."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diagnosis: Diagnosis | None = None
        self._text = Text(" diagnosis: looking for the first NaN or infinity…")

    def show(self, diagnosis: Diagnosis | None, note: str = "") -> None:
        """Show `diagnosis`; None shows `note` (e.g. no NaN or infinity in the run)."""
        self.diagnosis = diagnosis
        self.set_class(diagnosis is None or diagnosis.pattern in CLEAR_PATTERNS, "-clear")
        self._text = diagnosis_text(diagnosis) if diagnosis is not None else Text(f" {note}")
        self.refresh()

    @property
    def is_cut(self) -> bool:
        """Whether the line is longer than the widget (it then ends in `MORE_HINT`)."""
        return self._text.cell_len > self.size.width

    def render(self) -> Text:
        text = self._text.copy()
        text.no_wrap, text.end = True, ""
        if self.diagnosis is None or not self.is_cut:
            return text
        text.truncate(max(0, self.size.width - len(MORE_HINT)), overflow="ellipsis")
        text.append(MORE_HINT, "bold reverse")
        return text

    def on_click(self, event: events.Click) -> None:
        if self.diagnosis is not None:
            self.post_message(self.Chosen())
