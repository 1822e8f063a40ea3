"""The Textual app: one `DebuggerScreen` per run, the run picker, `?`, the command
palette, quitting (styles: `app.tcss`); and, on a live multi-worker job opened
without `--run`, the landing on the worker that went non-finite first once it is
known."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker

from reader.analysis.compare.diff import SIDE_NAMES
from reader.errors import DumpError
from reader.model import RunInfo
from reader.run.run_dir import list_runs
from reader.run.watch_pair import other_of_pair
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.dump_watcher import ENDED, POLL_INTERVAL_S
from tfdbg_tui.exit_codes import exit_code_for
from tfdbg_tui.logdir_watcher import OriginFound, follow_job
from tfdbg_tui.panes.registry import PANES
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.screens.debugger_results import OpenFailed, ReaderOpened
from tfdbg_tui.screens.help import HelpScreen, key_name
from tfdbg_tui.text.literal import literal

# A bucket's listing of runs at most this old serves the run picker: listing a bucket
# takes a request per run (seconds, for hundreds of workers), and a run that started
# meanwhile shows at the next `r`. A local logdir is listed at every `r`.
RELISTED_WITHIN_S = 5.0


class DebuggerApp(App[int]):
    """The tfdbg-tui app on one logdir.

    Args:
        logdir: The logdir to open.
        runs: Its runs, oldest first (from `reader.list_runs`); empty with ``wait``.
        run_id: The run to show first; None lands where
            `reader.analysis.jobs.open_landing_run` says (the newest run, or a
            multi-worker job's worker that went non-finite first), and follows a live
            job until that worker is known.
        poll_interval_s: Seconds between live-update polls of a growing dump.
        opening: A future of `tfdbg_tui.models.hunt.open_for_landing(logdir, run_id)`
            already under way.
        compare: Run A to show beside each run (`--compare`), or None.
        compare_names: What that comparison calls A and the run shown.
        wait: The logdir holds no run yet (`--wait`): start at once, and open the
            run when it appears.
    """

    CSS_PATH = "app.tcss"
    TITLE = "tfdbg-tui"
    # A zoomed pane keeps the footer below it (Textual's default names its own Footer).
    ALLOW_IN_MAXIMIZED_VIEW = "KeyFooter"

    BINDINGS = [
        Binding("question_mark", "show_keys", "Keys", key_display="?", tooltip="List every key"),
        Binding("q", "quit", "Quit"),
        # Before "r": at 80 columns the footer ends here (`?` lists every key).
        Binding(
            "t",
            "trends",
            "Trends",
            tooltip="Trends: per layer and step, the norms and magnitudes, and the "
            "watch rules' first anomaly before the first harmful value",
        ),
        Binding("r", "pick_run", "Runs"),
        Binding(
            "w",
            "watch_pair",
            "Replay",
            tooltip="A watched run's replay of its hit step, or a replay's watched run",
            show=False,
        ),
        Binding("ctrl+p", "command_palette", "Commands", show=False),
        Binding(
            "ctrl+z",
            "suspend_process",
            "Suspend",
            show=False,
            tooltip="Suspend to the shell (fg comes back); a terminal's only",
        ),
    ]

    def __init__(
        self,
        logdir: str,
        runs: list[RunInfo],
        run_id: str | None = None,
        *,
        poll_interval_s: float = POLL_INTERVAL_S,
        opening: Future | None = None,
        compare: str | None = None,
        compare_names: tuple[str, str] = SIDE_NAMES,
        wait: bool = False,
    ) -> None:
        super().__init__()
        self.wait = wait
        self.compare = compare
        self.compare_names = compare_names
        self.opening = opening
        self.logdir = logdir
        self.runs = list(runs)
        self.initial_run_id = run_id
        self.poll_interval_s = poll_interval_s
        self.error_message: str | None = None
        self.landing: DebuggerScreen | None = None
        """The screen the app chose the run of (no run asked for): a job's worker that
        went non-finite first replaces it, until the user moves on it by hand."""
        self._job_followed = False

    @on(OpenFailed)
    def _open_failed(self, message: OpenFailed) -> None:
        """A run could not be opened: exit with the status for its error; `app_main`
        prints its one-line message."""
        self.error_message = str(message.error)
        self.exit(return_code=exit_code_for(message.error))

    def on_mount(self) -> None:
        screen = self._debugger_screen(self.initial_run_id, self.opening, wait=self.wait)
        if self.initial_run_id is None:
            self.landing = screen
        self.push_screen(screen)

    def _debugger_screen(
        self, run_id: str | None, opening: Future | None = None, wait: bool = False
    ) -> DebuggerScreen:
        return DebuggerScreen(
            self.logdir,
            run_id,
            runs=self.runs,
            poll_interval_s=self.poll_interval_s,
            opening=opening,
            compare=self.compare,
            compare_names=self.compare_names,
            wait=wait,
        )

    @on(ReaderOpened)
    def _run_opened(self, message: ReaderOpened) -> None:
        """A screen opened its run (the message bubbles up from it): follow the run's
        multi-worker job, when the app chose the run and the job may still write."""
        if message.runs is not None:
            self.runs = list(message.runs)
        metadata = message.opened.reader.metadata
        if (
            self.initial_run_id is None
            and not self._job_followed
            and metadata.cluster is not None
            and message.opened.state not in ENDED
        ):
            self._job_followed = True
            self._follow_job(metadata.cluster)

    @work(thread=True, exclusive=True, group="follow-job")
    def _follow_job(self, cluster: str) -> None:
        follow_job(
            self.logdir, cluster, self, self.poll_interval_s, get_current_worker().cancelled_event
        )

    @on(OriginFound)
    def _origin_found(self, message: OriginFound) -> None:
        """Land on the worker that went non-finite first, unless the user has moved
        (on the screen the app chose, or to another): then say where it is."""
        worker = message.worker
        landing = self.landing
        shown = next(
            (
                screen
                for screen in reversed(self.screen_stack)
                if isinstance(screen, DebuggerScreen)
            ),
            None,
        )
        if shown is not None and shown.run_id == worker.run_id:
            return
        said = f"{worker.task} went non-finite first"
        if landing is not None and self.screen is landing and not landing.moved_by_hand:
            self.notify(literal(f"{said}: showing its run"), markup=False)
            self.landing = self._debugger_screen(worker.run_id)
            self.switch_screen(self.landing)
        else:
            self.notify(
                literal(f"{said} (run {worker.run_id}): press r to open it"),
                markup=False,
                timeout=15,
            )

    def get_system_commands(self, screen: Screen):
        """Textual's commands, plus every debugger action, for the command palette."""
        yield from super().get_system_commands(screen)
        if not isinstance(screen, DebuggerScreen):
            return
        for pane in PANES:
            yield SystemCommand(
                f"Focus {pane.SECTION.name}",
                f"Key {pane.SECTION.key}",
                lambda w=pane.CONTENT_ID: screen.action_focus_pane(w),
            )
        for pane in PANES:
            for command in pane.COMMANDS:
                yield SystemCommand(
                    command.title,
                    f"{pane.SECTION.name}: {key_name(pane.binding_of(command.action))}",
                    lambda w=pane.CONTENT_ID, a=command.action: getattr(
                        screen.query_one(f"#{w}"), f"action_{a}"
                    )(),
                )
        yield SystemCommand("Zoom or unzoom the focused pane", "Key z", screen.action_toggle_zoom)
        yield SystemCommand("Next alert", "Key ]", lambda: screen.action_alert_step(1))
        yield SystemCommand("Previous alert", "Key [", lambda: screen.action_alert_step(-1))
        yield SystemCommand("Compare with another run", "Key c", screen.action_compare)
        for key, which, title in (
            ("F", "first", "First"),
            ("d", "next", "Next"),
            ("D", "previous", "Previous"),
        ):
            yield SystemCommand(
                f"{title} divergence from the compared run",
                f"Key {key}",
                lambda w=which: screen.action_divergence(w),
            )
        yield SystemCommand("Trends by layer and step, watch rules", "Key t", self.action_trends)
        yield SystemCommand("Choose a run", "Key r", self.action_pick_run)
        yield SystemCommand("Show every key", "Key ?", self.action_show_keys)

    def action_suspend_process(self) -> None:
        """Suspend to the shell, as Ctrl+Z does in a terminal; the browser view has no
        shell to go back to, so there it says so instead."""
        if self.is_web:
            self.notify(
                "Ctrl+Z suspends to the shell in a terminal only: this is the browser view "
                "(close the tab to end this app)",
                severity="warning",
            )
            return
        super().action_suspend_process()

    def action_show_keys(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS))

    def action_trends(self) -> None:
        """Open the Trends view of the run on screen (once it is open)."""
        screen = self.screen
        if not isinstance(screen, DebuggerScreen) or screen.reader is None:
            return
        from tfdbg_tui.screens.trends import TrendsScreen

        self.push_screen(TrendsScreen(screen.reader))

    def action_pick_run(self) -> None:
        self._list_runs(self._show_picker)

    @work(thread=True, exclusive=True, group="list-runs")
    def _list_runs(self, then: Callable[[list[RunInfo]], None]) -> None:
        """List the logdir again (a job's other workers may have started since; in a
        bucket a listing is a request, so off the event loop; one made a moment ago,
        `RELISTED_WITHIN_S`, serves), then call ``then`` with the runs (the picker, or
        the watch pair's other run)."""
        try:
            runs = list_runs(self.logdir, fresh_within=RELISTED_WITHIN_S)
        except DumpError:
            runs = self.runs  # the logdir went away: pick among the runs known
        self.call_from_thread(then, runs)

    def _show_picker(self, runs: list[RunInfo]) -> None:
        self.runs = list(runs)
        if len(self.runs) < 2:
            self.notify("this logdir holds one run" if self.runs else "no run in this logdir yet")
            return
        current = self.screen.run_id if isinstance(self.screen, DebuggerScreen) else None
        opened = [
            screen.reader
            for screen in self.screen_stack
            if isinstance(screen, DebuggerScreen) and screen.reader is not None
        ]
        self.push_screen(RunPickerDialog(self.runs, current, opened=opened), self._run_picked)

    def action_watch_pair(self) -> None:
        self._list_runs(self._open_pair)

    def _open_pair(self, runs: list[RunInfo]) -> None:
        """Open the other run of the current run's watch pair (`other_of_pair`)."""
        self.runs = list(runs)
        current = self.screen.run_id if isinstance(self.screen, DebuggerScreen) else None
        other, why = other_of_pair(self.runs, current)
        if other is None:
            self.notify(why, severity="warning")
            return
        self._run_picked(other)

    def _run_picked(self, run_id: str | None) -> None:
        if run_id is None:
            return
        if isinstance(self.screen, DebuggerScreen) and self.screen.run_id == run_id:
            return
        self.switch_screen(self._debugger_screen(run_id))
