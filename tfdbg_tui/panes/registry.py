"""The debugger's panes: `PANES`, the one list of them in the order of their keys
(the screen's keys, the command palette and `?` read it), and `COLUMNS`, where the
debugger screen lays them out (app.tcss sizes each by its id; tested against it).

Everything else about a pane is declared by the pane itself (`Pane`: its key, name,
main widget and palette commands); `LIST_PANES` are those whose main widget is a
`LineList`, which all move alike (`?` and docs/keys.md say so once)."""

from __future__ import annotations

from tfdbg_tui.panes.alerts import AlertsPane
from tfdbg_tui.panes.graph_execution import GraphExecutionPane
from tfdbg_tui.panes.graph_structure import GraphStructurePane
from tfdbg_tui.panes.source_code import SourceCodePane
from tfdbg_tui.panes.stack_trace import StackTracePane
from tfdbg_tui.panes.timeline import TimelinePane
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane

PANES: tuple[type[Pane], ...] = (
    AlertsPane,
    TimelinePane,
    GraphExecutionPane,
    GraphStructurePane,
    SourceCodePane,
    StackTracePane,
)
# The left column, then the right one, top to bottom.
COLUMNS: tuple[tuple[type[Pane], ...], ...] = (
    (AlertsPane, TimelinePane, GraphExecutionPane),
    (GraphStructurePane, StackTracePane, SourceCodePane),
)
# The panes whose main widget is a `LineList`: they share its keys.
LIST_PANES: tuple[type[Pane], ...] = tuple(p for p in PANES if issubclass(p.CONTENT, LineList))
