"""`RunComparison`, an object the debugger screen holds: comparing the shown run (B)
with another (A), `tfdbg-tui B --compare A` or `c` (a worker opens A and runs
`reader.analysis.compare.diff.align_runs`), landing on the first divergence, `F` `d`
`D`.

`RunComparison` is an object the debugger screen holds once B is open. A worker opens
A and aligns the two runs (`reader.analysis.compare.diff.align_runs`: it walks both, so never
on the event loop) and posts one `AlignmentLoaded` to the screen, whose handler passes
it here: the comparison is set on Graph Execution (attributes down) and the screen
lands on the first divergence. `F`, `d` and `D` move between divergences (the list
searches the alignment's arrays). The other panes follow B, as always.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

import reader as dump_reader_module
from reader import AnalysedRun, DumpReader
from reader.analysis.compare.diff import GRAPH, SIDE_NAMES, RunAlignment, align_runs
from reader.errors import DumpError
from reader.model import RunInfo
from tfdbg_tui.dialogs.prompt import PromptDialog
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.models.comparison_columns import TraceComparison
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.panes.timeline import TimelineCells
from tfdbg_tui.screens.debugger_results import HuntLoaded
from tfdbg_tui.text.literal import literal

# What the landing notice adds: the keys that move on from the first divergence.
DIVERGENCE_KEYS_HINT = "F first, d / D next / previous divergence"


@dataclass
class AlignmentLoaded(Message):
    """Runs A and B aligned: what Graph Execution shows beside B's rows."""

    comparison: TraceComparison
    reader_a: DumpReader
    token: int


@dataclass
class ComparisonFailed(DumpFailed):
    """Run A could not be opened or aligned; B stays shown alone."""

    token: int


class RunComparison:
    """Shows B beside A in Graph Execution, and moves between their divergences.

    The screen passes on `AlignmentLoaded` and `ComparisonFailed` (`aligned`,
    `failed`), asks `defers` before landing on B's root cause, and shows
    `compared_run_id` on the status line.

    Args:
        screen: The debugger screen: it runs the worker, receives its messages and
            shows the pickers.
        reader_b: The shown run's reader (B).
        logdir: B's logdir (`c` offers its other runs as A).
        runs: The runs of that logdir.
        graph_list: Graph Execution, which shows A beside B.
        timeline: The timeline, for a first divergence among eager executions.
    """

    KEYS = [
        Binding(
            "c",
            "compare",
            "Compare runs",
            show=False,
            tooltip="Compare this run (B) with another (A, the good one): A's "
            "summaries beside B's in Graph Execution",
        ),
        Binding(
            "F",
            "divergence('first')",
            "First divergence",
            key_display="F",
            show=False,
            tooltip="Go to the first divergence from the compared run A",
        ),
        Binding(
            "d",
            "divergence('next')",
            "Next divergence",
            show=False,
            tooltip="Go to the next trace that diverges from run A",
        ),
        Binding(
            "D",
            "divergence('previous')",
            "Prev divergence",
            key_display="D",
            show=False,
            tooltip="Go to the previous trace that diverges from run A",
        ),
    ]
    """The comparison's keys, bound on the debugger screen, which delegates them."""

    def __init__(
        self,
        screen: Screen,
        reader_b: AnalysedRun,
        *,
        logdir: str,
        runs: Sequence[RunInfo],
        graph_list: GraphExecutionList,
        timeline: TimelineCells,
    ) -> None:
        self.screen = screen
        self.reader_b = reader_b
        self.logdir = logdir
        self.runs = runs
        self.graph_list = graph_list
        self.timeline = timeline
        self.path: str | None = None
        """A's path, while a comparison is asked for or shown."""
        self.shown: TraceComparison | None = None
        """What Graph Execution shows beside B, once aligned."""
        self._token = 0
        self._reader_a: DumpReader | None = None  # closed when replaced, or by `close`
        self._deferred_hunt: HuntLoaded | None = None

    @property
    def compared_run_id(self) -> str | None:
        """A's run id while B is shown beside it (the status line says so)."""
        return self.shown.run_id_a if self.shown is not None else None

    @property
    def compared_name(self) -> str:
        """What the comparison shown calls A (the status line says so)."""
        return self.shown.name_a if self.shown is not None else SIDE_NAMES[0]

    def start(
        self, path: str, run_id: str | None = None, names: tuple[str, str] = SIDE_NAMES
    ) -> None:
        """Open run A (`path`: a run directory or a logdir, whose newest run, or
        `run_id`, is taken) and compare B with it, in a worker; `names`: what the
        comparison calls A and B (`tfdbg-tui run --ab` names them by what each is)."""
        self.path = path
        self._token += 1
        self.screen.notify(
            literal(f"aligning with {path}…"), title="Compare", markup=False, timeout=3
        )
        self.screen.run_worker(
            partial(self._load, path, run_id, names, self._token),
            name="compare",
            group="compare",
            exclusive=True,
            thread=True,
        )

    def _load(self, path: str, run_id: str | None, names: tuple[str, str], token: int) -> None:
        try:
            reader_a = dump_reader_module.open_run(path, run_id)
        except DumpError as error:
            self.screen.post_message(ComparisonFailed(error, token))
            return
        try:
            alignment = align_runs(reader_a, self.reader_b, names=names)
            comparison = TraceComparison(alignment, reader_a, reader_a.metadata.run_id)
            comparison.refresh()
        except DumpError as error:
            reader_a.close()
            self.screen.post_message(ComparisonFailed(error, token))
            return
        self.screen.post_message(AlignmentLoaded(comparison, reader_a, token))

    def failed(self, message: ComparisonFailed) -> HuntLoaded | None:
        """Say why A could not be compared; returns the hunt held back for it, which
        the screen lands on now."""
        if message.token != self._token:
            return None
        self.screen.notify(
            literal(str(message.error)), title="Could not compare", severity="error", markup=False
        )
        if self.shown is not None:
            return None
        self.path = None
        return self._release_deferred_hunt()

    def aligned(self, message: AlignmentLoaded) -> HuntLoaded | None:
        """Show A beside B and land on the first divergence; returns the hunt held
        back for it when there is none, which the screen lands on now."""
        if message.token != self._token:
            message.reader_a.close()
            return None
        previous = self._reader_a
        self.shown = message.comparison
        self._reader_a = message.reader_a
        self.graph_list.comparison = message.comparison
        if previous is not None:
            previous.close()
        return self._land_on_first_divergence(message.comparison.alignment)

    def close(self) -> None:
        """Close A's reader (the screen is going away)."""
        if self._reader_a is not None:
            self._reader_a.close()
            self._reader_a = None

    # -- landing --------------------------------------------------------------------------

    def defers(self, hunt: HuntLoaded) -> bool:
        """While comparing, the screen lands on the first divergence, not on B's root
        cause: True holds the hunt's selection back (until the alignment shows there is
        no divergence, when `aligned` returns it)."""
        if self.path is None:
            return False
        if self.shown is None:
            self._deferred_hunt = hunt
            return True
        return self.shown.alignment.diff.first_divergence is not None

    def _release_deferred_hunt(self) -> HuntLoaded | None:
        hunt, self._deferred_hunt = self._deferred_hunt, None
        return hunt

    def _land_on_first_divergence(self, alignment: RunAlignment) -> HuntLoaded | None:
        diff = alignment.diff
        first = diff.first_divergence
        if first is None:
            self.screen.notify(
                f"no divergence: the {diff.aligned:,} aligned tensors agree "
                f"(compared {diff.compared})",
                title=literal(f"vs {diff.names[0]}"),
                timeout=10,
            )
            return self._release_deferred_hunt()
        self._deferred_hunt = None
        if first.kind == GRAPH:
            self.graph_list.select_trace(first.b.index)
            self.screen.set_focus(self.graph_list)
            where = f"{first.op_type} '{first.op_name}:{first.slot}'"
        else:
            self.timeline.select_execution(first.b.index)
            self.screen.set_focus(self.timeline)
            where = f"eager {first.op_type} #{first.b.index}"
        step = f" at step {first.step}" if first.step is not None else ""
        self.screen.notify(
            literal(f"first divergence: {where}{step}: {first.detail}. {DIVERGENCE_KEYS_HINT}"),
            title=literal(f"vs {diff.names[0]}"),
            markup=False,
            timeout=10,
        )
        return None

    # -- keys -----------------------------------------------------------------------------

    def go_to_divergence(self, which: str) -> None:
        """Go to the "first", "next" or "previous" divergent trace of B."""
        if self.shown is None:
            self.screen.notify("not comparing: press c to compare with another run")
            return
        if self.graph_list.select_divergence(which):
            self.screen.set_focus(self.graph_list)

    def choose(self) -> None:
        """Ask for run A: another run of this logdir, or a path when it holds one run."""
        run_id_b = self.reader_b.metadata.run_id
        others = [run for run in self.runs if run.run_id != run_id_b]
        if others:
            self.screen.app.push_screen(
                RunPickerDialog(others, None, title="Compare with which run (A, the good one)?"),
                self._picked,
            )
        else:
            self.screen.app.push_screen(
                PromptDialog("Compare with run A (the good one)", "a run directory or logdir"),
                self._path_entered,
            )

    def _picked(self, run_id: str | None) -> None:
        if run_id is not None:
            self.start(self.logdir, run_id)

    def _path_entered(self, path: str | None) -> None:
        if path and path.strip():
            self.start(path.strip())
