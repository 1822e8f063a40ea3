"""The Textual app: one `DebuggerScreen` per run, the run picker, help, quitting."""

from __future__ import annotations

from concurrent.futures import Future

from textual.app import App
from textual.binding import Binding

from reader.errors import DamagedDumpError, DumpError, FormatVersionError, NoRunsError
from reader.model import RunInfo
from tfdbg_tui import cli
from tfdbg_tui.dump_watcher import POLL_INTERVAL_S
from tfdbg_tui.screens.debugger import DebuggerScreen


def exit_code_for(error: DumpError) -> int:
    """The documented exit status for a reader error (see `tfdbg_tui.cli`)."""
    if isinstance(error, FormatVersionError):
        return cli.EXIT_NEWER_FORMAT
    if isinstance(error, DamagedDumpError):
        return cli.EXIT_DAMAGED
    if isinstance(error, NoRunsError):
        return cli.EXIT_NO_DUMP
    return cli.EXIT_NO_DUMP


class DebuggerApp(App[int]):
    """The tfdbg-tui app on one logdir.

    Args:
        logdir: The logdir to open.
        runs: Its runs, oldest first (from `reader.list_runs`).
        run_id: The run to show first; None shows the newest.
        poll_interval_s: Seconds between live-update polls of a growing dump.
        opening: A future of `reader.open_run(logdir, run_id)` already under way.
    """

    CSS_PATH = "app.tcss"
    TITLE = "tfdbg-tui"

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "show_keys", "Keys", key_display="?"),
        Binding("r", "pick_run", "Runs"),
        Binding("ctrl+p", "command_palette", "Commands", show=False),
    ]

    def __init__(self, logdir: str, runs: list[RunInfo], run_id: str | None = None, *,
                 poll_interval_s: float = POLL_INTERVAL_S,
                 opening: Future | None = None) -> None:
        super().__init__()
        self.opening = opening
        self.logdir = logdir
        self.runs = list(runs)
        self.initial_run_id = run_id
        self.poll_interval_s = poll_interval_s
        self.error_message: str | None = None

    def fail(self, error: DumpError) -> None:
        """Exit with the status for `error`; `app_main` prints its one-line message."""
        self.error_message = str(error)
        self.exit(return_code=exit_code_for(error))

    def on_mount(self) -> None:
        self.push_screen(self._debugger_screen(self.initial_run_id, self.opening))

    def _debugger_screen(self, run_id: str | None,
                         opening: Future | None = None) -> DebuggerScreen:
        return DebuggerScreen(self.logdir, run_id, run_count=len(self.runs),
                              poll_interval_s=self.poll_interval_s, opening=opening)

    def action_show_keys(self) -> None:
        from tfdbg_tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_pick_run(self) -> None:
        from tfdbg_tui.screens.run_picker import RunPickerScreen

        if len(self.runs) < 2:
            self.notify("this logdir holds one run")
            return
        current = self.screen.run_id if isinstance(self.screen, DebuggerScreen) else None
        self.push_screen(RunPickerScreen(self.runs, current), self._run_picked)

    def _run_picked(self, run_id: str | None) -> None:
        if run_id is None:
            return
        if isinstance(self.screen, DebuggerScreen) and self.screen.run_id == run_id:
            return
        self.switch_screen(self._debugger_screen(run_id))
