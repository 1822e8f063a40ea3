"""The status line: live or finished, the counts, the mode and the run; in a browser
(`tfdbg-tui serve`), that it is the browser view."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from reader.analysis.compare.diff import SIDE_NAMES
from reader.model import DUMPER_TENSORFLOW, RunMetadata
from reader.run import liveness
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.run_state import STATE_WORDS, TENSORFLOW_DUMP
from tfdbg_tui.text.text_fit import cut_middle

# A live run that wrote nothing for this long is said to be idle; when its process
# cannot be checked (another host) it may have been killed (a killed run never
# writes its `end` record).
IDLE_AFTER_S = 10.0

# The fewest cells of the run id the line keeps (its start and end) before it drops
# words elsewhere to make room.
RUN_ID_MIN_CELLS = 15
# While comparing (`--compare`): the fewest cells each run id keeps (two ids share the
# room one had); " vs A: " (A's name in the comparison) stands between them.
COMPARED_ID_MIN_CELLS = 10
# The tag the line begins with when the app runs behind `tfdbg-tui serve`'s page.
BROWSER_VIEW = " browser view "
BROWSER_VIEW_STYLE = "bold white on blue"


@dataclass(frozen=True)
class RunStatus:
    """What the status line says about the run.

    `state` is the run's `reader.run.liveness` state: finished, stopped (recording
    stopped on a write error, such as a full disk), running (its process is alive on
    this host), killed (its process is gone and it has no `end`), or unknown (written
    on another host: running, or killed). `followed`: new records are still
    looked for.
    """

    metadata: RunMetadata
    state: str
    followed: bool
    num_executions: int
    num_traces: int
    alerts: int | None
    run_count: int
    idle_s: float = 0.0
    notices: int = 0  # the writer's notices (`reader.notices`)
    warnings: int = 0  # of which warnings
    compared_with: str | None = None  # run A's id while B is shown beside it
    compared_name: str = SIDE_NAMES[0]  # what the comparison calls run A


class StatusLine(Widget):
    """One line at the top of the debugger screen, laid out for its width: at 80
    columns the labels shorten and the run id loses its middle, never all of it."""

    DEFAULT_CSS = """
    StatusLine { dock: top; height: 1; background: $panel; }
    """

    def __init__(self, placeholder: str = " opening…", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.placeholder = placeholder
        self.status: RunStatus | None = None
        self.waiting: tuple[str, str | None] | None = None
        """The logdir and run id (None: any run) waited for, until the run opens."""

    def show_waiting(self, logdir: str, run_id: str | None) -> None:
        """Say that the app waits for ``run_id`` (None: the first run) in ``logdir``."""
        self.waiting = (logdir, run_id)
        self.refresh()

    def show(
        self,
        metadata: RunMetadata,
        *,
        state: str,
        followed: bool,
        num_executions: int,
        num_traces: int,
        alerts: int | None,
        run_count: int,
        idle_s: float = 0.0,
        notices: int = 0,
        warnings: int = 0,
        compared_with: str | None = None,
        compared_name: str = SIDE_NAMES[0],
    ) -> None:
        """Rewrite the line (`RunStatus` says what each argument means). A killed run
        says so; a live one idle for `IDLE_AFTER_S` or more, whose process cannot be
        checked, may have been killed: it says that."""
        self.status = RunStatus(
            metadata,
            state,
            followed,
            num_executions,
            num_traces,
            alerts,
            run_count,
            idle_s,
            notices,
            warnings,
            compared_with,
            compared_name,
        )
        self.refresh()

    def render(self) -> Text:
        if self.status is None and self.waiting is not None:
            logdir, run_id = self.waiting
            which = "the first run" if run_id is None else f"run {literal(run_id)}"
            text = Text(no_wrap=True, end="")
            if self.app.is_web:
                text.append(BROWSER_VIEW, BROWSER_VIEW_STYLE)
            text.append(f" waiting for {which} in ", "bold")
            room = max(self.size.width - text.cell_len - 1, RUN_ID_MIN_CELLS)
            text.append(cut_middle(literal(logdir), room))
            text.append("…")
            return text
        if self.status is None:
            return Text(self.placeholder)
        run_id = literal(self.status.metadata.run_id)
        other = self.status.compared_with
        other = None if other is None else literal(other)
        versus = f" vs {literal(self.status.compared_name)}: " if other is not None else ""
        for compact in (False, True):
            text = self._words(self.status, compact, browser=self.app.is_web)
            room = self.size.width - text.cell_len
            if room >= len(run_id) + len(versus) + len(other or ""):
                break
        if other is None:
            text.append(cut_middle(run_id, max(room, RUN_ID_MIN_CELLS)), "bold")
            return text
        # Comparing: both ids share the room, each cut in the middle.
        each = max((room - len(versus)) // 2, COMPARED_ID_MIN_CELLS)
        text.append(cut_middle(run_id, max(each, room - len(versus) - len(other))), "bold")
        text.append(versus, "bold reverse")
        text.append(cut_middle(other, max(each, room - len(versus) - len(run_id))), "bold")
        return text

    @staticmethod
    def _words(status: RunStatus, compact: bool, browser: bool = False) -> Text:
        """Everything before the run id; when `compact`, short labels and single
        spaces (the keys are in the footer and `?`). ``browser``: the app runs behind
        `tfdbg-tui serve`'s page, and the line begins by saying so."""
        text = Text(no_wrap=True, end="")
        if browser:
            text.append(BROWSER_VIEW, BROWSER_VIEW_STYLE)
            text.append(" " if compact else "  ")
        if status.state == liveness.FINISHED:
            text.append(f" {STATE_WORDS[liveness.FINISHED].name} ", "bold reverse")
        elif status.state == liveness.STOPPED:
            stopped = STATE_WORDS[liveness.STOPPED]
            text.append(
                f" {stopped.short.upper()}: {stopped.cause} "
                if compact
                else f" {stopped.name.upper()} ({stopped.cause}) ",
                "bold white on red",
            )
        elif status.state == liveness.KILLED:
            why = "" if compact else ", no end record"
            text.append(
                f" {STATE_WORDS[liveness.KILLED].name.upper()} "
                f"(pid {status.metadata.pid} gone{why}) ",
                "bold white on red",
            )
        elif not status.followed:
            text.append(" not followed ", "bold black on yellow")
        elif status.metadata.dumper == DUMPER_TENSORFLOW:
            # Followed all the same.
            text.append(f" {TENSORFLOW_DUMP.word} ", "bold black on cyan")
        else:
            live = STATE_WORDS[liveness.RUNNING].name.upper()
            if status.idle_s < IDLE_AFTER_S:
                text.append(f" ● {live} ", "bold black on green")
            elif status.state == liveness.RUNNING:
                text.append(f" ● {live}, idle {status.idle_s:.0f}s ", "bold black on green")
            else:
                doubt = STATE_WORDS[liveness.UNKNOWN]
                doubt_said = f", {doubt.short}" if compact else f" ({doubt.name})"
                text.append(
                    f" {live}? idle {status.idle_s:.0f}s{doubt_said} ", "bold black on yellow"
                )
        executions, traces = ("exec", "trace") if compact else ("executions", "traces")
        gap = " " if compact else "  "
        text.append(
            f"{gap}{executions} {status.num_executions:,}{gap}{traces} {status.num_traces:,}"
        )
        if status.alerts is not None:
            text.append(f"{gap}alerts {status.alerts:,}", "bold red" if status.alerts else "green")
        if status.notices:
            plural = "s" if status.notices != 1 else ""
            label = (
                f"⚠ {status.notices} notice{plural}"
                if status.warnings
                else f"{status.notices} note{plural}"
            )
            text.append(gap)
            text.append(
                label + ("" if compact else " (!)"),
                "bold black on yellow" if status.warnings else "dim",
            )
        text.append(f"{gap}{status.metadata.tensor_debug_mode}")
        # The watch tier's pair (w opens the other run of it).
        key = "" if compact else " (w)"
        if status.metadata.replay_of is not None:
            text.append(f" replay of step {status.metadata.replay_of.step}{key}", "bold magenta")
        elif status.metadata.watched:
            text.append(f" watched{key}", "bold magenta")
        if status.run_count > 1:
            text.append(f"{gap}{status.run_count} runs" + ("" if compact else " (r)"))
        text.append(" " if compact else "  run ")
        return text
