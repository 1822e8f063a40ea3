"""`TextDialog`: a text in a box of its own, scrollable: the whole diagnosis (`e`) and
the writer's notices (`!`). Esc, q or the key that opened it closes it."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.notices import Notice
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.diagnosis_line import diagnosis_text


def close_binding(key: str) -> Binding:
    """What closes a text dialog that ``key`` opened: Esc, q, and ``key`` again (the
    dialog binds it; the `?` list shows it)."""
    return Binding(f"escape,q,{key}", "dismiss", "Close")


class TextDialog(ModalScreen[None]):
    """Shows ``text`` in a bordered box, scrollable; `close_binding(key)` closes it.

    Args:
        text: What it shows.
        key: The key that opened it (it closes it too).
        title: The box's title.
        subtitle: What the text is about, under the box (None: nothing).
        tone: The border's colour: ``"error"`` (a diagnosis) or ``"warning"``.
    """

    DEFAULT_CSS = """
    TextDialog { align: center middle; }
    TextDialog > VerticalScroll {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        background: $panel; padding: 0 1;
    }
    TextDialog.error > VerticalScroll { border: round $error; }
    TextDialog.warning > VerticalScroll { border: round $warning; }
    """

    def __init__(
        self,
        text: Text,
        *,
        key: str,
        title: str,
        subtitle: Text | None = None,
        tone: Literal["error", "warning"],
    ) -> None:
        super().__init__(classes=tone)
        self.text = text
        self.title_text = title
        self.subtitle = subtitle
        # A binding of this instance: each dialog closes on the key that opened it.
        closing = close_binding(key)
        self._bindings.bind(closing.key, closing.action, closing.description)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = self.title_text
            if self.subtitle is not None:
                scroll.border_subtitle = self.subtitle
            yield Static(self.text, id="dialog-text")

    def show_text(self, text: Text) -> None:
        """Replace what the box shows (a proof that arrived while it was open)."""
        self.text = text
        self.query_one("#dialog-text", Static).update(text)


def diagnosis_dialog(
    diagnosis: Diagnosis, proof: str | None = None, values: tuple[str, ...] = ()
) -> TextDialog:
    """The diagnosis line in full (`e`): explanation, fix, its proof, the op's values
    and evidence, under the alert it diagnoses."""
    alert = diagnosis.alert
    subtitle = None
    if alert is not None:
        name = f"{alert.op_name}:{alert.slot}" if alert.op_name else f"{alert.slot}"
        subtitle = Text(
            literal(f"{alert.op_type} {name}, {alert.kind} #{alert.index}, step {alert.step}")
        )
    return TextDialog(
        diagnosis_text(diagnosis, full=True, proof=proof, values=values),
        key="e",
        title="Diagnosis",
        subtitle=subtitle,
        tone="error",
    )


def notices_dialog(notices: tuple[Notice, ...]) -> TextDialog:
    """Every notice the writer recorded about the run (`!`), warnings first."""
    return TextDialog(
        notices_text(notices),
        key="exclamation_mark",
        title=f"Notices ({len(notices)})",
        tone="warning",
    )


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
