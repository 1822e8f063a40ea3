"""How the CLI commands print their human output: one console, and `literal_line` (parts
shown literally).

Rich ends the process with status 1 when the output pipe closes
(`Console.on_broken_pipe`); ours raises `BrokenPipeError` instead, so that every
output path ends the same way (`tfdbg_tui.cli.main`: quietly, status 141). Lines are
built from parts shown literally (`tfdbg_tui.text.literal`), never read as markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from tfdbg_tui.text.literal import literal


class OutputConsole(Console):
    """A Console for a command's standard output."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def output_console() -> Console:
    """The console for human output: no highlighting, lines wrapped by the terminal."""
    return OutputConsole(highlight=False, soft_wrap=True)


def literal_line(*parts: str | tuple[str, str]) -> Text:
    """A `Text` of parts, plain or ``(text, style)``, each shown literally."""
    line = Text(end="")
    for part in parts:
        text, style = part if isinstance(part, tuple) else (part, "")
        line.append(literal(text), style)
    return line
