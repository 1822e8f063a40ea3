"""The reads the Graph Execution list asks of the screen: a search, a tensor's value.

A base class of `DebuggerScreen`, kept apart so that the screen stays a thin
coordinator. The list posts typed messages that carry everything the read needs (the
pattern and where to start, the trace); a worker reads, posts the result, and the
handler sets it on the list (attributes down). Nothing here queries the list back.
"""

from __future__ import annotations

from textual import on, work
from textual.message import Message
from textual.screen import Screen

from reader.errors import DumpError
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.screens.tensor_value import TensorValueScreen
from tfdbg_tui.text.literal import literal


class TraceNavigation(Screen):
    """Handles `GraphExecutionList.SearchRequested` and `ValueRequested` in workers.

    Subclasses set `reader` and `trace_context`.
    """

    reader = None
    trace_context = None

    class ReadFailed(DumpFailed):
        """A worker's read raised a `DumpError` (e.g. a record that left the disk)."""

    @on(ReadFailed)
    def _read_failed(self, message: ReadFailed) -> None:
        self.notify(literal(str(message.error)), title="Could not read", severity="warning",
                    markup=False)

    class JumpToTrace(Message):
        """A search result: select `trace_index`, or say `note` when None."""

        def __init__(self, trace_index: int | None, note: str) -> None:
            super().__init__()
            self.trace_index = trace_index
            self.note = note

    class ValueLoaded(Message):
        """A FULL_TENSOR value to show (None: the dump stores no values)."""

        def __init__(self, title: str, value) -> None:
            super().__init__()
            self.title = title
            self.value = value

    @on(GraphExecutionList.SearchRequested)
    def _search_requested(self, message: GraphExecutionList.SearchRequested) -> None:
        self.search(message.pattern, message.start, message.forward)

    @work(thread=True, exclusive=True, group="search")
    def search(self, pattern: str, start: int, forward: bool) -> None:
        try:
            found = self.reader.find_trace(pattern, start, forward=forward)
        except DumpError as error:
            self.post_message(self.ReadFailed(error))
            return
        note = "" if found is not None else f"no {'later' if forward else 'earlier'} match"
        self.post_message(self.JumpToTrace(found, note))

    @on(JumpToTrace)
    def _jump_to_trace(self, message: JumpToTrace) -> None:
        if message.trace_index is None:
            self.notify(message.note)
        else:
            self.query_one(GraphExecutionList).select_trace(message.trace_index)

    @on(GraphExecutionList.ValueRequested)
    def _value_requested(self, message: GraphExecutionList.ValueRequested) -> None:
        context = self.trace_context
        name = f"#{message.trace_index}"
        if (context is not None and context.op is not None
                and context.trace.index == message.trace_index):
            name += f" {context.op.name}:{context.trace.slot}"
        self.load_value(message.trace_index, name)

    @work(thread=True, exclusive=True, group="value")
    def load_value(self, trace_index: int, name: str) -> None:
        try:
            value = self.reader.trace_value(trace_index)
        except DumpError as error:
            self.post_message(self.ReadFailed(error))
            return
        self.post_message(self.ValueLoaded(name, value))

    @on(ValueLoaded)
    def _value_loaded(self, message: ValueLoaded) -> None:
        if message.value is None:
            self.notify("no value stored: the dump's mode is not FULL_TENSOR")
            return
        self.app.push_screen(TensorValueScreen(message.title, message.value))
