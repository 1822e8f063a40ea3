"""The `?` screen: every key binding, by where it works, built from the bindings
themselves so it cannot drift from them. The app that opens it passes its own
bindings down (the app imports this screen, never the other way round)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tfdbg_tui.dialogs.prompt import PromptDialog
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.dialogs.text_dialog import close_binding
from tfdbg_tui.panes.registry import LIST_PANES, PANES
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.screens.run_comparison import RunComparison
from tfdbg_tui.screens.tensor_value import TensorValueScreen
from tfdbg_tui.screens.trends import TrendsScreen
from tfdbg_tui.widgets.line_list import LineList


def key_name(binding: Binding) -> str:
    """How the help and the command palette show a binding's key: "/", "PgUp"."""
    if binding.key_display:
        return binding.key_display
    names = {
        "right_square_bracket": "]",
        "left_square_bracket": "[",
        "full_stop": ".",
        "comma": ",",
        "slash": "/",
        "exclamation_mark": "!",
        "question_mark": "?",
        "pageup": "PgUp",
        "pagedown": "PgDn",
        "escape": "Esc",
        "home": "Home",
        "end": "End",
        "up": "↑",
        "down": "↓",
        "left": "←",
        "right": "→",
        "enter": "Enter",
        "ctrl+p": "Ctrl+P",
    }
    return ", ".join(names.get(k, k) for k in binding.key.split(","))


def key_sections(
    app_bindings: Sequence[Binding | tuple],
) -> list[tuple[str, list[tuple[str, str]]]]:
    """(section, [(key, what it does)]) for the app (`app_bindings`), the screen and
    every pane."""

    def rows(bindings) -> list[tuple[str, str]]:
        return [
            (key_name(b), b.tooltip or b.description) for b in bindings if isinstance(b, Binding)
        ]

    return [
        ("Anywhere", rows(app_bindings) + rows(DebuggerScreen.SCREEN_KEYS)),
        (
            f"Every list ({', '.join(pane.SECTION.name for pane in LIST_PANES)})",
            rows(LineList.BINDINGS),
        ),
        ("Comparing two runs (--compare A, or c)", rows(RunComparison.KEYS)),
        *((pane.TITLE, rows(pane.CONTENT.BINDINGS)) for pane in PANES),
        ("Tensor value view (v)", rows(TensorValueScreen.BINDINGS)),
        ("Trends (t)", rows(TrendsScreen.BINDINGS)),
        ("Diagnosis (e)", rows([close_binding("e")])),
        ("Notices (!)", rows([close_binding("exclamation_mark")])),
        ("Go-to and search prompts", [("Enter", "Accept")] + rows(PromptDialog.BINDINGS)),
        ("Run picker (r)", [("Enter", "Open the run")] + rows(RunPickerDialog.BINDINGS)),
        ("This list", rows(HelpScreen.BINDINGS)),
    ]


def help_text(app_bindings: Sequence[Binding | tuple]) -> Text:
    """Every key, by section (`key_sections`)."""
    text = Text()
    for section, keys in key_sections(app_bindings):
        text.append(section + "\n", "bold underline")
        for key, description in keys:
            text.append(f"  {key:<12}", "bold")
            text.append(description + "\n")
        text.append("\n")
    text.append("Esc or q closes this list.", "italic")
    return text


class HelpScreen(ModalScreen[None]):
    """Lists every key binding; Esc, q or ? closes it.

    Args:
        app_bindings: The bindings of the app that shows it (they work anywhere).
    """

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-width: 100%; height: 90%;
        border: round $accent; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, app_bindings: Sequence[Binding | tuple]) -> None:
        super().__init__()
        self.app_bindings = app_bindings

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(self.app_bindings), id="help-text")
