"""The debugger screen: lays out the panes and coordinates them (workers, handlers);
a thin coordinator that holds its collaborators (`TraceNavigation`, `RunComparison`)
once the run is open and delegates to them.

Panes post messages up (a tensor, frame or alert was selected); this screen reads
what they need in thread workers and sets it on them (attributes down). Panes never
reach into each other.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Key, MouseDown, Resize
from textual.screen import Screen
from textual.worker import get_current_worker

import reader as dump_reader_module
from reader import format as fmt
from reader.analysis.compare.diff import SIDE_NAMES
from reader.analysis.diagnosis.diagnosis import Diagnosis, diagnose_alert
from reader.analysis.hunt.steps import Steps, gap_between
from reader.errors import DumpError
from reader.model import Alert, AlertSummary, RootCause, RunInfo
from reader.notices import count_warnings
from reader.run import liveness
from tfdbg_tui.dialogs.text_dialog import notices_dialog
from tfdbg_tui.dump_watcher import ENDED, POLL_INTERVAL_S, DumpChanged, DumpWatcher, DumpWatchFailed
from tfdbg_tui.logdir_watcher import wait_for_run
from tfdbg_tui.models.context_loader import (
    TraceContext,
    load_execution_context,
    load_source,
    load_trace_context,
    source_span,
)
from tfdbg_tui.models.hunt import Opened, open_for_landing, read_hunt
from tfdbg_tui.models.source_view import SourceView
from tfdbg_tui.panes.alerts import AlertList
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.graph_structure import GraphStructureList
from tfdbg_tui.panes.registry import COLUMNS, PANES
from tfdbg_tui.panes.source_code import SourceCodePane
from tfdbg_tui.panes.stack_trace import StackTraceList
from tfdbg_tui.panes.timeline import TimelineCells, TimelinePane
from tfdbg_tui.screens.debugger_results import (
    ContextLoaded,
    DiagnosisLoaded,
    HuntLoaded,
    OpenFailed,
    ReaderOpened,
    ReadFailed,
    SourceLoaded,
)
from tfdbg_tui.screens.diagnosis_proofs import DiagnosisProofs, ProofLoaded
from tfdbg_tui.screens.run_comparison import AlignmentLoaded, ComparisonFailed, RunComparison
from tfdbg_tui.screens.trace_navigation import TraceFound, TraceNavigation, ValueLoaded
from tfdbg_tui.text.literal import literal
from tfdbg_tui.widgets.diagnosis_line import DiagnosisLine
from tfdbg_tui.widgets.key_footer import KeyFooter
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.status_line import StatusLine

# How often the status line rechecks a live run that stopped growing (killed runs
# never write their `end` record; see `StatusLine`).
IDLE_CHECK_S = 5.0

# The narrowest screen whose footer shows the command palette's key.
COMMANDS_IN_FOOTER_WIDTH = 100

# Keys that leave the user where they are (help): they do not count as a move by hand.
KEYS_THAT_STAY = frozenset({"question_mark"})


class DebuggerScreen(Screen):
    """The panes of one run (`tfdbg_tui.panes.registry`), a status line and the footer.

    Once the run is open the screen holds three collaborators its handlers delegate
    to: `navigation` (search and values for Graph Execution), `comparison` (run A
    beside this run) and `proofs` (the proof of the diagnosis's fix, `e`).

    Args:
        logdir: The logdir holding the run.
        run_id: The run to open; None opens the newest.
        runs: The logdir's runs (the status line counts them; `c` offers them as A).
        poll_interval_s: Seconds between live-update polls.
        opening: A future of `tfdbg_tui.models.hunt.open_for_landing`, when opening
            has begun already.
        compare: Run A to show beside this run (`RunComparison`), or None.
        compare_names: What that comparison calls A and this run.
        wait: The logdir holds no run (``run_id``) yet: say so, and open it once it
            appears (`tfdbg_tui.logdir_watcher.wait_for_run`).
    """

    ALERT_KEYS = Binding.Group("Alert", compact=True)
    SCREEN_KEYS = [
        *(
            Binding(
                pane.SECTION.key, f"focus_pane('{pane.CONTENT_ID}')", pane.SECTION.name, show=False
            )
            for pane in PANES
        ),
        Binding("z", "toggle_zoom", "Zoom"),
        Binding("escape", "unzoom", "Unzoom", show=False),
        Binding(
            "left_square_bracket", "alert_step(-1)", "Prev alert", key_display="[", group=ALERT_KEYS
        ),
        Binding(
            "right_square_bracket", "alert_step(1)", "Next alert", key_display="]", group=ALERT_KEYS
        ),
        Binding(
            "e",
            "explain",
            "Explain",
            tooltip="The whole diagnosis of the selected alert: why, the fix, the evidence",
            show=False,
        ),
        Binding(
            "u",
            "chain_step",
            "Chain",
            tooltip="Step along the diagnosis' chain, from where the bad values were made "
            "to the root cause: the panes follow each op",
            show=False,
        ),
        Binding(
            "exclamation_mark",
            "notices",
            "Notices",
            key_display="!",
            tooltip="The writer's notices: what of the program is not in the dump, and why",
            show=False,
        ),
    ]
    """The screen's own keys; the comparison's (`RunComparison.KEYS`) follow."""
    BINDINGS = [*SCREEN_KEYS, *RunComparison.KEYS]

    def __init__(
        self,
        logdir: str,
        run_id: str | None = None,
        *,
        runs: Sequence[RunInfo] = (),
        poll_interval_s: float = POLL_INTERVAL_S,
        opening: Future[Opened] | None = None,
        compare: str | None = None,
        compare_names: tuple[str, str] = SIDE_NAMES,
        wait: bool = False,
    ) -> None:
        super().__init__()
        self.opening = opening
        self.wait = wait
        self.compare = compare
        self.compare_names = compare_names
        self.logdir = logdir
        self.run_id = run_id
        self.runs = runs
        self.poll_interval_s = poll_interval_s
        self.reader: dump_reader_module.DumpReader | None = None
        """The run's reader (thread-safe), once opened."""
        self.navigation: TraceNavigation | None = None
        """Search and values for Graph Execution, once the run is open."""
        self.comparison: RunComparison | None = None
        """Run A beside this run (`--compare`, `c`), once the run is open."""
        self.watcher: DumpWatcher | None = None
        self.alert_summary: AlertSummary | None = None
        self.root_cause: RootCause | None = None
        self.steps: Steps | None = None
        self.trace_context: TraceContext | None = None
        self.diagnosis: Diagnosis | None = None  # what the diagnosis line shows
        self.chain_position = -1  # the link of the diagnosis' chain `u` selected last
        self.proofs: DiagnosisProofs | None = None
        self.run_state = liveness.UNKNOWN
        self.last_growth = time.monotonic()
        self.hunt_done = False
        self.watching_failed = False
        self._sources: dict[int, SourceView] = {}  # highlighted files, by file id
        # Thread workers cannot be stopped: a cancelled one still posts its result.
        # Each request takes a new token; a result whose token is not the latest of
        # its kind is stale and dropped.
        self._tokens = {"selection": 0, "detail": 0, "source": 0, "diagnosis": 0}
        self.alert_chosen = False  # the user selected an alert: keep its diagnosis
        self.moved_by_hand = False
        """The user pressed a key (but `?`) or clicked here since the run opened: the
        app no longer replaces this screen by itself (`DebuggerApp`'s job landing)."""

    def _next_token(self, kind: str) -> int:
        self._tokens[kind] += 1
        return self._tokens[kind]

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield DiagnosisLine(id="diagnosis")
        with Horizontal(id="columns"):
            for column_id, column in zip(("left-column", "right-column"), COLUMNS):
                with Vertical(id=column_id):
                    for pane in column:
                        yield pane()
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#graph-execution").focus()
        if self.wait:
            self.query_one(StatusLine).show_waiting(self.logdir, self.run_id)
            self.query_one(DiagnosisLine).show(
                None, "no run yet: it opens as soon as the program writes it (q quits)"
            )
        # Index after the first frame is on screen: indexing a big dump holds the GIL
        # for a while, and the user should see the layout ("opening…") meanwhile.
        self.call_after_refresh(self.open_reader)

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        if self.comparison is not None:
            self.comparison.close()

    # -- opening and the hunt -------------------------------------------------------------

    @work(thread=True, exclusive=True, group="open")
    def open_reader(self) -> None:
        runs = None
        try:
            if self.opening is not None:
                opened = self.opening.result()
            elif self.wait:
                waited = wait_for_run(
                    self.logdir,
                    self.run_id,
                    self.poll_interval_s,
                    get_current_worker().cancelled_event,
                )
                if waited is None:
                    return  # cancelled: the app is closing
                runs, opened = waited
            else:
                opened = open_for_landing(self.logdir, self.run_id)
        except DumpError as error:
            self.post_message(OpenFailed(error))
            return
        self.post_message(ReaderOpened(opened, runs))

    def on_key(self, event: Key) -> None:
        if self.reader is not None and event.key not in KEYS_THAT_STAY:
            self.moved_by_hand = True

    def on_mouse_down(self, event: MouseDown) -> None:
        if self.reader is not None:
            self.moved_by_hand = True

    @on(ReaderOpened)
    def _reader_opened(self, message: ReaderOpened) -> None:
        hunt = message.opened.hunt
        reader = self.reader = message.opened.reader
        metadata = reader.metadata
        self.run_id = metadata.run_id
        if message.runs is not None:
            self.runs = message.runs
        graph_list = self.query_one(GraphExecutionList)
        graph_list.attach(reader, metadata.tensor_debug_mode)
        timeline = self.query_one(TimelineCells)
        timeline.attach(reader)
        self.navigation = TraceNavigation(self, reader, graph_list)
        self.proofs = DiagnosisProofs(self, reader)
        self.comparison = RunComparison(
            self,
            reader,
            logdir=self.logdir,
            runs=self.runs,
            graph_list=graph_list,
            timeline=timeline,
        )
        kept_executions = reader.kept_executions()
        if kept_executions and (hunt is None or hunt.root_cause is None):
            # (A landing loads the root cause's step instead.)
            self.load_execution_detail(kept_executions[0][0], self._next_token("detail"))
        self.run_state = message.opened.state
        self.update_status()
        damage = reader.damage
        if damage:
            self.notify(
                literal(f"{len(damage)} damaged part(s): {damage[0]}"),
                title="Damaged dump: showing what is readable",
                severity="warning",
                markup=False,
                timeout=10,
            )
        warnings = count_warnings(reader.notices())
        if warnings:
            self.notify(
                f"{warnings} warning notice(s): part of the program may be missing "
                "from the dump; press ! to read them",
                title="Notices",
                severity="warning",
                markup=False,
                timeout=10,
            )
        if self.compare is not None:
            self.comparison.start(self.compare, names=self.compare_names)
        if hunt is None:
            self.load_hunt(select=True)
        else:  # read with the open: land in this frame
            self._hunt_loaded(HuntLoaded(hunt, select=True))
        if self.live:
            self.watcher = DumpWatcher(reader, self, self.poll_interval_s)
            self.run_worker(
                self.watcher.run, thread=True, exclusive=True, group="watch", name="dump watcher"
            )
            self.set_interval(IDLE_CHECK_S, self.update_status)

    @work(thread=True, exclusive=True, group="hunt")
    def load_hunt(self, select: bool) -> None:
        reader = self.reader
        assert reader is not None
        try:
            loaded = HuntLoaded(read_hunt(reader), select)
        except DumpError as error:
            # A record left the disk while it was read (a circular buffer rotating
            # under a live run): say so; the next update hunts again.
            self.post_message(ReadFailed(error))
            return
        self.post_message(loaded)

    @on(HuntLoaded)
    def _hunt_loaded(self, message: HuntLoaded) -> None:
        hunt = message.hunt
        self.alert_summary = hunt.alerts
        self.root_cause = hunt.root_cause
        self.steps = hunt.steps
        graph_list = self.query_one(GraphExecutionList)
        graph_list.show_alert_traces(hunt.alert_traces)
        graph_list.steps = hunt.steps
        alert_list = self.query_one(AlertList)
        alert_list.show_alerts(hunt.alerts, hunt.steps, hunt.places)
        self.update_status()
        if not self.alert_chosen:
            self.show_diagnosis(hunt.diagnosis, hunt.no_alert)
        if not message.select or (self.comparison is not None and self.comparison.defers(message)):
            return
        self.land_on_hunt(message)

    def land_on_hunt(self, message: HuntLoaded) -> None:
        """Select the root cause in every pane (or the first row without one)."""
        root = message.hunt.root_cause
        self.hunt_done = root is not None
        alert_list = self.query_one(AlertList)
        graph_list = self.query_one(GraphExecutionList)
        timeline = self.query_one(TimelineCells)
        if root is not None:
            alert_list.show_alert(root.alert)
            if root.trace is not None:
                graph_list.select_trace(root.trace.index)
                self.set_focus(graph_list)
            else:
                timeline.select_execution(root.alert.index)
                self.set_focus(timeline)
        elif self.reader is not None and self.reader.num_traces:
            graph_list.move_cursor(0)
        else:
            timeline.move_to(0)

    # -- selections -----------------------------------------------------------------------

    @on(GraphExecutionList.TraceSelected)
    def _trace_selected(self, message: GraphExecutionList.TraceSelected) -> None:
        self.load_selection(load_trace_context, message.trace_index, self._next_token("selection"))

    @on(TimelineCells.ExecutionSelected)
    def _execution_selected(self, message: TimelineCells.ExecutionSelected) -> None:
        self.load_selection(
            load_execution_context, message.execution_index, self._next_token("selection")
        )

    @work(thread=True, exclusive=True, group="selection")
    def load_selection(self, load, index: int, token: int) -> None:
        """What the panes show about a selected trace or execution: `load(reader, index)`."""
        assert self.reader is not None  # a selection is made once the run is open
        try:
            context = load(self.reader, index)
        except DumpError as error:
            self.post_message(ReadFailed(error))
            return
        self.post_message(ContextLoaded(context, token))

    @work(thread=True, exclusive=True, group="execution-detail")
    def load_execution_detail(self, execution_index: int, token: int) -> None:
        """The timeline's detail only (a graph trace is selected: its stack stays)."""
        assert self.reader is not None  # a selection is made once the run is open
        try:
            context = load_execution_context(self.reader, execution_index)
        except DumpError:
            return  # the step's call is not on disk (yet, or any more): no detail to show
        self.post_message(ContextLoaded(context, token, detail_only=True))

    @on(ContextLoaded)
    def _context_loaded(self, message: ContextLoaded) -> None:
        kind = "detail" if message.detail_only else "selection"
        if message.token != self._tokens[kind]:
            return
        context = message.context
        stack = self.query_one(StackTraceList)
        if isinstance(context, TraceContext):
            self.trace_context = context
            graph_list = self.query_one(GraphExecutionList)
            traced = [n.trace_index for n in context.inputs if n.trace_index is not None]
            graph_list.input_traces = frozenset(traced)
            graph_list.first_input = traced[0] if traced else None
            self.query_one(GraphStructureList).show_context(
                context, "" if context.op else "this trace's op is not in the dump yet"
            )
            stack.show_frames(
                list(context.frames),
                context.selected_frame,
                "no creation stack recorded for this op",
                context.expressions,
            )
            if self.query_one(TimelineCells).sync_to_execution(context.trace.step):
                self.load_execution_detail(context.trace.step, self._next_token("detail"))
        else:
            self.query_one(TimelinePane).show_detail(
                context if context.execution is not None else None
            )
            if message.detail_only:
                return
            stack.show_frames(
                list(context.frames),
                context.selected_frame,
                "no call stack recorded for this execution",
                context.expressions,
            )

    @on(TimelineCells.GapSelected)
    def _timeline_gap_selected(self, message: TimelineCells.GapSelected) -> None:
        gap = gap_between(self.steps, fmt.STREAM_EXECUTIONS, message.begin, message.end)
        self.query_one(TimelinePane).show_detail(
            None,
            f"{gap.describe()}: executions #{message.begin}-#{message.end - 1} "
            "left the disk (circular buffer)",
        )

    @on(StackTraceList.FrameSelected)
    def _frame_selected(self, message: StackTraceList.FrameSelected) -> None:
        frame = message.frame
        self.load_frame_source(frame, self._sources.get(frame.file_id), self._next_token("source"))

    @work(thread=True, exclusive=True, group="source")
    def load_frame_source(self, frame, highlighted: SourceView | None, token: int) -> None:
        """Show the frame's line in its file, highlighting the file unless `highlighted`
        (the screen's copy) is given: each file is highlighted once."""
        assert self.reader is not None  # a frame is listed once the run is open
        if highlighted is None:
            highlighted = load_source(self.reader, frame)
        self.post_message(
            SourceLoaded(
                SourceView(
                    frame.path,
                    frame.line,
                    highlighted.lines,
                    highlighted.note,
                    source_span(self.reader, frame) if highlighted.lines is not None else None,
                ),
                token,
                frame.file_id,
                highlighted,
            )
        )

    @on(SourceLoaded)
    def _source_loaded(self, message: SourceLoaded) -> None:
        self._sources.setdefault(message.file_id, message.highlighted)
        if message.token == self._tokens["source"]:
            self.query_one(SourceCodePane).show(message.view)

    @on(AlertList.AlertSelected)
    def _alert_selected(self, message: AlertList.AlertSelected) -> None:
        alert = message.alert
        self.alert_chosen = True
        self.load_diagnosis(alert, self._next_token("diagnosis"))
        if alert.kind == "graph":
            if not self.query_one(GraphExecutionList).select_trace(alert.index):
                self.notify(f"trace #{alert.index} is no longer on disk", severity="warning")
        else:
            self.query_one(TimelineCells).select_execution(alert.index)

    @work(thread=True, exclusive=True, group="diagnosis")
    def load_diagnosis(self, alert: Alert, token: int) -> None:
        """The diagnosis of a selected alert
        (`reader.analysis.diagnosis.diagnosis.diagnose_alert`)."""
        assert self.reader is not None  # alerts are listed once the run is open
        try:
            diagnosis = diagnose_alert(self.reader, alert)
        except DumpError:
            return  # its records left the disk or are not read yet: the line stays
        self.post_message(DiagnosisLoaded(diagnosis, token))

    @on(DiagnosisLoaded)
    def _diagnosis_loaded(self, message: DiagnosisLoaded) -> None:
        if message.token == self._tokens["diagnosis"]:
            self.show_diagnosis(message.diagnosis)

    def show_diagnosis(self, diagnosis: Diagnosis | None, note: str = "") -> None:
        """Show `diagnosis` on the diagnosis line (`note` when None); `e` explains it."""
        self.diagnosis = diagnosis
        self.chain_position = -1
        self.query_one(DiagnosisLine).show(diagnosis, note)

    @on(GraphStructureList.OpChosen)
    def _op_chosen(self, message: GraphStructureList.OpChosen) -> None:
        neighbour = message.neighbour
        if neighbour.trace_index is None:
            self.notify("that op's output is not traced in this dump", severity="warning")
            return
        graph_list = self.query_one(GraphExecutionList)
        graph_list.select_trace(neighbour.trace_index)
        self.set_focus(graph_list)

    # -- live updates ---------------------------------------------------------------------

    @on(DumpChanged)
    def _dump_changed(self, message: DumpChanged) -> None:
        report = message.report
        self.run_state = message.state
        if report.changed:
            self.last_growth = time.monotonic()
        with self.app.batch_update():
            if report.new_traces or report.new_ops or report.damage:
                self.query_one(GraphExecutionList).reload()
            if report.new_executions:
                self.query_one(TimelineCells).data_changed()
            self.update_status()
        if report.new_alerts or report.new_traces or report.new_executions:
            self.load_hunt(select=not self.hunt_done)
        if report.damage:
            self.notify(
                literal(report.damage[0]), title="Damaged dump", severity="warning", markup=False
            )

    @on(DumpWatchFailed)
    def _watch_failed(self, message: DumpWatchFailed) -> None:
        self.run_state = liveness.UNKNOWN
        self.watching_failed = True
        self.notify(
            literal(str(message.error)),
            title="Stopped following the dump",
            severity="error",
            markup=False,
        )
        self.update_status()

    @property
    def live(self) -> bool:
        """Whether the run may still grow (it is followed while it does)."""
        return self.run_state not in ENDED and not self.watching_failed

    def update_status(self) -> None:
        """Rewrite the status line from the reader and the alert summary."""
        if self.reader is None:
            return
        notices = self.reader.notices()
        self.query_one(StatusLine).show(
            self.reader.metadata,
            state=self.run_state,
            followed=self.live,
            num_executions=self.reader.num_executions,
            num_traces=self.reader.num_traces,
            idle_s=time.monotonic() - self.last_growth if self.live else 0.0,
            alerts=self.alert_summary.total if self.alert_summary is not None else None,
            run_count=len(self.runs),
            notices=len(notices),
            warnings=count_warnings(notices),
            compared_with=self.comparison.compared_run_id if self.comparison else None,
            compared_name=self.comparison.compared_name if self.comparison else SIDE_NAMES[0],
        )

    def on_resize(self, event: Resize) -> None:
        # The footer's "^p Commands" takes 12 columns the pane keys need at 80
        # (Ctrl+P still works; `?` lists it).
        footer = self.query_one(KeyFooter)
        footer.show_command_palette = event.size.width >= COMMANDS_IN_FOOTER_WIDTH

    # -- keys -----------------------------------------------------------------------------

    def action_focus_pane(self, widget_id: str) -> None:
        if self.maximized is not None:
            self.minimize()
        # Focused now, not after the queued keys: "4z" typed in one burst zooms pane 4.
        self.set_focus(self.query_one(f"#{widget_id}"))

    def action_toggle_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            focused = self.focused
            self.maximize(focused)
            if isinstance(focused, LineList):
                focused.reset_sideways_scroll()

    def action_unzoom(self) -> None:
        if self.maximized is not None:
            self.minimize()

    @on(DiagnosisLine.Chosen)
    def _diagnosis_chosen(self) -> None:
        self.action_explain()

    def action_explain(self) -> None:
        """Show the whole diagnosis of the selected alert, with its evidence and the
        proof of its fix."""
        if self.diagnosis is None or self.proofs is None:
            self.notify("no diagnosis: no NaN or infinity yet")
            return
        self.app.push_screen(self.proofs.dialog(self.diagnosis))

    @on(ProofLoaded)
    def _proof_loaded(self, message: ProofLoaded) -> None:
        if self.proofs is not None:
            self.proofs.loaded(message, self.diagnosis)

    def action_chain_step(self) -> None:
        """Select the next op of the diagnosis' chain (origin first, then toward the
        root cause, round again): the panes follow it."""
        chain = self.diagnosis.chain if self.diagnosis is not None else ()
        if not chain:
            note = self.diagnosis.chain_note if self.diagnosis is not None else None
            self.notify(
                literal(note or "no chain: no op upstream made the bad values"), markup=False
            )
            return
        self.chain_position = (self.chain_position + 1) % len(chain)
        link = chain[self.chain_position]
        if link.trace is not None:
            if not self.query_one(GraphExecutionList).select_trace(link.trace):
                self.notify(f"trace #{link.trace} is no longer on disk", severity="warning")
        elif link.execution is not None:
            self.query_one(TimelineCells).select_execution(link.execution)
        self.notify(
            literal(f"{link.subject} [{link.op_type}]: {link.why}"),
            title=f"Chain {self.chain_position + 1}/{len(chain)}",
            markup=False,
        )

    def action_notices(self) -> None:
        """Show every notice the writer recorded about the run."""
        if self.reader is None:
            return
        self.app.push_screen(notices_dialog(self.reader.notices()))

    def action_alert_step(self, offset: int) -> None:
        if self.alert_summary is None or not self.alert_summary.alerts:
            self.notify("no alerts")
            return
        self.query_one(AlertList).step(offset)

    def action_compare(self) -> None:
        """Choose run A to show beside this run."""
        if self.comparison is not None:
            self.comparison.choose()

    def action_divergence(self, which: str) -> None:
        """Go to the "first", "next" or "previous" trace diverging from run A."""
        if self.comparison is not None:
            self.comparison.go_to_divergence(which)

    # -- the collaborators' results -------------------------------------------------------

    @on(ReadFailed)
    def _read_failed(self, message: ReadFailed) -> None:
        self.notify(
            literal(str(message.error)), title="Could not read", severity="warning", markup=False
        )

    @on(GraphExecutionList.SearchRequested)
    def _search_requested(self, message: GraphExecutionList.SearchRequested) -> None:
        if self.navigation is not None:
            self.navigation.search(message)

    @on(TraceFound)
    def _trace_found(self, message: TraceFound) -> None:
        if self.navigation is not None:
            self.navigation.found(message)

    @on(GraphExecutionList.ValueRequested)
    def _value_requested(self, message: GraphExecutionList.ValueRequested) -> None:
        if self.navigation is not None:
            self.navigation.load_value(message.trace_index, self.trace_context)

    @on(ValueLoaded)
    def _value_loaded(self, message: ValueLoaded) -> None:
        if self.navigation is not None:
            self.navigation.show_value(message)

    @on(AlignmentLoaded)
    def _alignment_loaded(self, message: AlignmentLoaded) -> None:
        if self.comparison is None:
            return
        hunt = self.comparison.aligned(message)
        self.update_status()
        if hunt is not None:
            self.land_on_hunt(hunt)

    @on(ComparisonFailed)
    def _comparison_failed(self, message: ComparisonFailed) -> None:
        if self.comparison is None:
            return
        hunt = self.comparison.failed(message)
        if hunt is not None:
            self.land_on_hunt(hunt)
