"""Comparing the shown run (B) with another (A): `tfdbg-tui B --compare A`, or `c`.

A base of `DebuggerScreen`, kept apart so that the screen stays a thin coordinator. A
worker opens A and aligns the two runs (`reader.analysis.diff.align_runs`: it walks both, so
never on the event loop) and posts one `AlignmentLoaded`; its handler sets the
comparison on Graph Execution (attributes down), says what is compared on the status
line and lands on the first divergence. `F`, `d` and `D` move between divergences by
binary search in the alignment's arrays. The other panes follow B, as always.
"""

from __future__ import annotations

from textual import on, work
from textual.binding import Binding
from textual.message import Message

import reader as dump_reader_module
from reader.analysis.diff import GRAPH, RunAlignment, align_runs
from reader.errors import DumpError
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.panes.comparison_columns import TraceComparison
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.timeline import TimelineCells
from tfdbg_tui.screens.prompt import PromptScreen
from tfdbg_tui.screens.run_picker import RunPickerScreen
from tfdbg_tui.screens.trace_navigation import TraceNavigation
from tfdbg_tui.text.literal import literal

# What the landing notice adds: the keys that move on from the first divergence.
DIVERGENCE_KEYS_HINT = "F first, d / D next / previous divergence"


class AlignmentLoaded(Message):
    """Runs A and B aligned: what Graph Execution shows beside B's rows."""

    def __init__(self, comparison: TraceComparison, reader_a, token: int) -> None:
        super().__init__()
        self.comparison = comparison
        self.reader_a = reader_a
        self.token = token


class ComparisonFailed(DumpFailed):
    """Run A could not be opened or aligned; B stays shown alone."""

    def __init__(self, error: DumpError, token: int) -> None:
        super().__init__(error)
        self.token = token


class RunComparison(TraceNavigation):
    """Shows B beside A in Graph Execution; keys for the divergences.

    Subclasses set `reader` (B), `logdir`, `run_id` and call `start_comparison` once B
    is open, `hunt_selection_deferred` before landing on the root cause, and pass
    `compared_run_id` to the status line.
    """

    BINDINGS = [
        Binding("c", "compare", "Compare runs", show=False,
                tooltip="Compare this run (B) with another (A, the good one): A's "
                        "summaries beside B's in Graph Execution"),
        Binding("F", "divergence('first')", "First divergence", key_display="F", show=False,
                tooltip="Go to the first divergence from the compared run A"),
        Binding("d", "divergence('next')", "Next divergence", show=False,
                tooltip="Go to the next trace that diverges from run A"),
        Binding("D", "divergence('previous')", "Prev divergence", key_display="D", show=False,
                tooltip="Go to the previous trace that diverges from run A"),
    ]

    logdir = ""
    run_id: str | None = None
    compare_path: str | None = None  # A, while a comparison is asked for or shown
    comparison: TraceComparison | None = None
    _compare_token = 0
    _compared_reader = None  # A's reader, closed when replaced or on unmount
    _deferred_hunt: Message | None = None

    def start_comparison(self, path: str, run_id: str | None = None) -> None:
        """Open run A (`path`: a run directory or a logdir, whose newest run, or
        `run_id`, is taken) and compare B with it, in a worker."""
        self.compare_path = path
        self._compare_token += 1
        self.notify(literal(f"aligning with {path}…"), title="Compare", markup=False,
                    timeout=3)
        self.load_comparison(path, run_id, self._compare_token)

    @work(thread=True, exclusive=True, group="compare")
    def load_comparison(self, path: str, run_id: str | None, token: int) -> None:
        try:
            reader_a = dump_reader_module.open_run(path, run_id)
        except DumpError as error:
            self.post_message(ComparisonFailed(error, token))
            return
        try:
            alignment = align_runs(reader_a, self.reader)
            comparison = TraceComparison(alignment, reader_a, reader_a.metadata.run_id)
            comparison.refresh()
        except DumpError as error:
            reader_a.close()
            self.post_message(ComparisonFailed(error, token))
            return
        self.post_message(AlignmentLoaded(comparison, reader_a, token))

    @on(ComparisonFailed)
    def _comparison_failed(self, message: ComparisonFailed) -> None:
        if message.token != self._compare_token:
            return
        self.notify(literal(str(message.error)), title="Could not compare",
                    severity="error", markup=False)
        if self.comparison is None:
            self.compare_path = None
            self._release_deferred_hunt()

    @on(AlignmentLoaded)
    def _alignment_loaded(self, message: AlignmentLoaded) -> None:
        if message.token != self._compare_token:
            message.reader_a.close()
            return
        previous = self._compared_reader
        self.comparison = message.comparison
        self._compared_reader = message.reader_a
        self.query_one(GraphExecutionList).comparison = message.comparison
        if previous is not None:
            previous.close()
        self.update_status()
        self._land_on_first_divergence(message.comparison.alignment)

    def close_comparison(self) -> None:
        """Close A's reader (the screen is going away)."""
        if self._compared_reader is not None:
            self._compared_reader.close()
            self._compared_reader = None

    @property
    def compared_run_id(self) -> str | None:
        """A's run id while B is shown beside it (the status line says so)."""
        return self.comparison.run_id_a if self.comparison is not None else None

    def update_status(self) -> None:
        """Rewrite the status line (the screen's)."""

    # -- landing --------------------------------------------------------------------------

    def hunt_selection_deferred(self, hunt: Message) -> bool:
        """While comparing, the screen lands on the first divergence, not on B's root
        cause: True holds the hunt's selection back (until the alignment shows there is
        no divergence, when `land_on_hunt` runs after all)."""
        if self.compare_path is None:
            return False
        if self.comparison is None:
            self._deferred_hunt = hunt
            return True
        return self.comparison.alignment.diff.first_divergence is not None

    def land_on_hunt(self, hunt) -> None:
        """Select the hunt's root cause (the screen's)."""

    def _release_deferred_hunt(self) -> None:
        hunt, self._deferred_hunt = self._deferred_hunt, None
        if hunt is not None:
            self.land_on_hunt(hunt)

    def _land_on_first_divergence(self, alignment: RunAlignment) -> None:
        diff = alignment.diff
        first = diff.first_divergence
        if first is None:
            self.notify(f"no divergence: the {diff.aligned:,} aligned tensors agree "
                        f"(compared {diff.compared})", title="vs A", timeout=10)
            self._release_deferred_hunt()
            return
        self._deferred_hunt = None
        if first.kind == GRAPH:
            graph_list = self.query_one(GraphExecutionList)
            graph_list.select_trace(first.b.index)
            self.set_focus(graph_list)
            where = f"{first.op_type} '{first.op_name}:{first.slot}'"
        else:
            timeline = self.query_one(TimelineCells)
            timeline.select_execution(first.b.index)
            self.set_focus(timeline)
            where = f"eager {first.op_type} #{first.b.index}"
        step = f" at step {first.step}" if first.step is not None else ""
        self.notify(literal(f"first divergence: {where}{step}: {first.detail}. "
                            f"{DIVERGENCE_KEYS_HINT}"), title="vs A", markup=False,
                    timeout=10)

    # -- keys -----------------------------------------------------------------------------

    def action_divergence(self, which: str) -> None:
        """Go to the "first", "next" or "previous" divergent trace of B."""
        if self.comparison is None:
            self.notify("not comparing: press c to compare with another run")
            return
        alignment = self.comparison.alignment
        graph_list = self.query_one(GraphExecutionList)
        position = graph_list.position
        if which == "first" or position is None:
            target = alignment.first
        else:
            target = alignment.next_divergence(position, forward=which == "next")
        if target is None:
            self.notify("no divergence in the graph traces" if which == "first"
                        else f"no {'later' if which == 'next' else 'earlier'} divergence")
            return
        graph_list.select_trace(target)
        self.set_focus(graph_list)

    def action_compare(self) -> None:
        """Choose run A: another run of this logdir, or a path when it holds one run."""
        others = [run for run in getattr(self.app, "runs", []) if run.run_id != self.run_id]
        if others:
            self.app.push_screen(
                RunPickerScreen(others, None, title="Compare with which run (A, the good one)?"),
                self._compare_picked)
        else:
            self.app.push_screen(
                PromptScreen("Compare with run A (the good one)", "a run directory or logdir"),
                self._compare_path_entered)

    def _compare_picked(self, run_id: str | None) -> None:
        if run_id is not None:
            self.start_comparison(self.logdir, run_id)

    def _compare_path_entered(self, path: str | None) -> None:
        if path and path.strip():
            self.start_comparison(path.strip())
