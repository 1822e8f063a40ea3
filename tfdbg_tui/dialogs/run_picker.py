"""`RunPickerDialog`: choose one of the runs in a logdir, newest first, a multi-worker
job's first non-finite worker marked (from its runs' progress files, before any run is
opened), then the runs' alerts counted in a worker."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

import reader as dump_reader_module
from reader.analysis.analysed_run import AnalysedRun
from reader.analysis.jobs import job_workers, origin_worker
from reader.errors import DumpError
from reader.model import DUMPER_TENSORFLOW, RunInfo
from reader.run import liveness
from reader.run.watch_pair import newest_first_in_pairs
from tfdbg_tui.text.literal import literal
from tfdbg_tui.text.run_state import STATE_WORDS, TENSORFLOW_DUMP

# What a run's alert count shows while it is being counted, or when it cannot be.
COUNTING, UNCOUNTABLE = "counting", "unreadable"


def run_label(
    run: RunInfo,
    alerts: int | str = COUNTING,
    *,
    first_in_job: bool = False,
    hit: int | None = None,
) -> Text:
    """One line about a run: start time, id, its task in a multi-worker job, alert
    count (`COUNTING` until known, `UNCOUNTABLE` if the run cannot be read), mode,
    finished or not, host and pid. ``first_in_job``: the worker of a multi-worker job
    that went non-finite first (`reader.analysis.jobs`). A watched run shows its
    ``hit`` step (or "no hit") for its alerts, a replay the step it replays in place of
    its start time."""
    started = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.start_time))
        if run.start_time
        else "start unknown"
    )
    text = Text(f"{started}  ")
    if run.replay_of is not None:
        # Below its watched run (`newest_first_in_pairs`): the pair reads as one.
        text = Text("  └ ")
        text.append(f"replay of step {run.replay_of.step}", "bold magenta")
        text.append("  ")
    text.append(literal(run.run_id), "bold")
    if run.task is not None:
        text.append(literal(f"  {run.task}"), "bold cyan")
        if first_in_job:
            text.append("  first non-finite", "bold red reverse")
    if hit is not None:
        text.append(f"  hit at step {hit}", "bold red")
    elif run.watched and isinstance(alerts, int):
        text.append("  no hit", "green")
    elif isinstance(alerts, int):
        text.append(
            f"  alerts {alerts:,}" if alerts else "  no alerts", "bold red" if alerts else "green"
        )
    else:
        text.append(f"  alerts {alerts}", "dim")
    mode = "watched" if run.watched else run.tensor_debug_mode or "?"
    text.append(literal(f"  {mode}  "))
    state = liveness.state_of(
        run.finished, liveness.process_gone(run.host, run.pid, run.start_time), run.stopped
    )
    if run.dumper == DUMPER_TENSORFLOW:
        text.append(TENSORFLOW_DUMP.word, "cyan")
    else:
        text.append(STATE_WORDS[state].word, _STATE_STYLES[state])
    text.append(literal(f"  {run.host or '?'} pid {run.pid if run.pid is not None else '?'}"))
    return text


# The colour of a run's `reader.run.liveness` state (its words: `STATE_WORDS`).
_STATE_STYLES = {
    liveness.FINISHED: "green",
    liveness.STOPPED: "bold red",
    liveness.RUNNING: "green",
    liveness.KILLED: "bold red",
    liveness.UNKNOWN: "yellow",
}


class RunPickerDialog(ModalScreen[str | None]):
    """Lists the runs, newest first; Enter returns the chosen run id.

    Args:
        runs: The runs, oldest first (as `reader.list_runs` returns them).
        current: The run shown now (highlighted).
        title: What is asked (default: how many runs the logdir holds).
        opened: Runs the app has open (indexed, analysed): a job's ranking reads them
            as they are instead of opening them again.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    RunPickerDialog { align: center middle; }
    RunPickerDialog > Vertical {
        width: 100; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $panel;
    }
    RunPickerDialog OptionList { height: auto; max-height: 20; }
    """

    def __init__(
        self,
        runs: list[RunInfo],
        current: str | None,
        title: str | None = None,
        opened: Sequence[AnalysedRun] = (),
    ) -> None:
        super().__init__()
        self._listed = list(runs)
        self._opened = tuple(opened)
        self.runs = newest_first_in_pairs(runs)
        self.current = current
        self._alerts: dict[int, int | str] = {}
        self._hits: dict[int, int] = {}
        self._origins: set[str] = set()
        self.title_text = title or f"{len(self.runs)} runs in this logdir, newest first:"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, markup=False)
            yield OptionList(
                *(Option(run_label(run), id=str(i)) for i, run in enumerate(self.runs)), id="runs"
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        ids = [run.run_id for run in self.runs]
        options.highlighted = ids.index(self.current) if self.current in ids else 0
        options.focus()
        # Once laid out: a row that wraps is then known to take two lines, all in view.
        self.call_after_refresh(options.scroll_to_highlight)
        self._count_alerts()

    @work(thread=True, exclusive=True)
    def _count_alerts(self) -> None:
        """Mark each multi-worker job's worker that went non-finite first (ranked from
        the runs' progress files, `reader.analysis.jobs.job_workers`), then open each
        run (newest first) and show its alert count as it is known."""
        worker = get_current_worker()
        for cluster in dict.fromkeys(r.cluster for r in self.runs if r.cluster is not None):
            if worker.is_cancelled:
                return
            try:
                origin = origin_worker(job_workers(self._listed, cluster, self._opened))
            except (DumpError, OSError):
                continue  # the logdir cannot be read any more: no mark
            if origin is not None:
                self._origins = self._origins | {origin.run_id}
                for position, run in enumerate(self.runs):
                    if run.run_id == origin.run_id:
                        self.app.call_from_thread(self._show_count, position)
        for position, run in enumerate(self.runs):
            if worker.is_cancelled:
                return
            try:
                with dump_reader_module.open_run(run.path) as dump:
                    alerts: int | str = dump.alerts(limit_per_type=0).total
                    log = dump.watch_log() if run.watched else None
                    if log is not None and log.hit is not None:
                        self._hits[position] = log.hit.step
            except (DumpError, OSError):
                alerts = UNCOUNTABLE
            self._alerts[position] = alerts
            self.app.call_from_thread(self._show_count, position)

    def _show_count(self, position: int) -> None:
        run = self.runs[position]
        options = self.query_one(OptionList)
        options.replace_option_prompt(
            str(position),
            run_label(
                run,
                self._alerts.get(position, COUNTING),
                first_in_job=run.run_id in self._origins,
                hit=self._hits.get(position),
            ),
        )
        if position == options.highlighted:
            options.scroll_to_highlight()  # its new words may take a line more

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        position = event.option.id
        assert position is not None  # every option's id is its run's position in `runs`
        self.dismiss(self.runs[int(position)].run_id)

    def action_cancel(self) -> None:
        self.dismiss(None)
