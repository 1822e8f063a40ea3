"""The Rich console the CLI commands print their human output with.

Rich ends the process with status 1 when the output pipe closes
(`Console.on_broken_pipe`); ours raises `BrokenPipeError` instead, so that every
output path ends the same way (`tfdbg_tui.cli.main`: quietly, status 141).
"""

from __future__ import annotations

from rich.console import Console


class OutputConsole(Console):
    """A Console for a command's standard output."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def output_console() -> Console:
    """The console for human output: no highlighting, lines wrapped by the terminal."""
    return OutputConsole(highlight=False, soft_wrap=True)
