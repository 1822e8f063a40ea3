"""`TraceNavigation`, an object the debugger screen holds: the reads the Graph Execution
list asks of it (a search, a value).

`TraceNavigation` is an object the screen holds once the run is open. The list posts
typed messages that carry everything the read needs (the pattern and where to start,
the trace); the screen's handlers pass them here; a worker reads, posts the result to
the screen, and the screen's handler hands it back here to set on the list
(attributes down). Nothing here queries the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from textual.message import Message
from textual.screen import Screen

from reader import Run
from reader.errors import DumpError
from tfdbg_tui.models.context_loader import TraceContext
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.screens.debugger_results import ReadFailed
from tfdbg_tui.screens.tensor_value import TensorValueScreen


@dataclass
class TraceFound(Message):
    """A search result: select `trace_index`, or say `note` when None."""

    trace_index: int | None
    note: str


@dataclass
class ValueLoaded(Message):
    """A FULL_TENSOR value to show (None: the dump stores no values)."""

    title: str
    value: np.ndarray | None


class TraceNavigation:
    """Searches and tensor values for Graph Execution, read in workers.

    Args:
        screen: The debugger screen: it runs the workers and receives their messages.
        reader: The run's reader.
        graph_list: The Graph Execution list, which results are set on.
    """

    def __init__(self, screen: Screen, reader: Run, graph_list: GraphExecutionList) -> None:
        self.screen = screen
        self.reader = reader
        self.graph_list = graph_list

    def search(self, request: GraphExecutionList.SearchRequested) -> None:
        """Find the trace `request` asks for, in a worker; posts `TraceFound`."""
        self.screen.run_worker(
            partial(self._search, request.pattern, request.start, request.forward),
            name="search",
            group="search",
            exclusive=True,
            thread=True,
        )

    def _search(self, pattern: str, start: int, forward: bool) -> None:
        try:
            found = self.reader.find_trace(pattern, start, forward=forward)
        except DumpError as error:
            self.screen.post_message(ReadFailed(error))
            return
        note = "" if found is not None else f"no {'later' if forward else 'earlier'} match"
        self.screen.post_message(TraceFound(found, note))

    def found(self, result: TraceFound) -> None:
        """Select the search's result, or say there is none."""
        if result.trace_index is None:
            self.screen.notify(result.note)
        else:
            self.graph_list.select_trace(result.trace_index)

    def load_value(self, trace_index: int, context: TraceContext | None) -> None:
        """Read trace `trace_index`'s value in a worker; posts `ValueLoaded`.
        `context`, the selected trace's, names it when it is that trace."""
        name = f"#{trace_index}"
        if context is not None and context.op is not None and context.trace.index == trace_index:
            name += f" {context.op.name}:{context.trace.slot}"
        self.screen.run_worker(
            partial(self._load_value, trace_index, name),
            name="value",
            group="value",
            exclusive=True,
            thread=True,
        )

    def _load_value(self, trace_index: int, name: str) -> None:
        try:
            value = self.reader.trace_value(trace_index)
        except DumpError as error:
            self.screen.post_message(ReadFailed(error))
            return
        self.screen.post_message(ValueLoaded(name, value))

    def show_value(self, loaded: ValueLoaded) -> None:
        """Open the value's screen, or say the dump stores none."""
        if loaded.value is None:
            self.screen.notify("no value stored: the dump's mode is not FULL_TENSOR")
            return
        self.screen.app.push_screen(TensorValueScreen(loaded.title, loaded.value))
