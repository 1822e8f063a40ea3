"""The Graph Execution pane's actions that read the dump: alert jumps, go to an index,
search, and the value view. A base class of `DebuggerScreen`, kept apart so that the
screen stays a thin coordinator.
"""

from __future__ import annotations

from textual import on, work
from textual.message import Message
from textual.screen import Screen

from reader.errors import DumpError
from reader.trace_search import compile_search
from tfdbg_tui.literal import literal
from tfdbg_tui.messages import DumpFailed
from tfdbg_tui.panes.graph_execution import GraphExecutionList
from tfdbg_tui.screens.prompt import PromptScreen


class TraceNavigation(Screen):
    """Handles `GraphExecutionList.ActionRequested`: reads in workers, then selects.

    Subclasses set `reader`, `trace_rows` and `trace_context`.
    """

    reader = None
    trace_rows = None
    trace_context = None
    last_search: str | None = None

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

    @on(GraphExecutionList.ActionRequested)
    def _graph_action(self, message: GraphExecutionList.ActionRequested) -> None:
        graph_list = self.query_one(GraphExecutionList)
        current = graph_list.selected_trace
        position = graph_list.position  # on a gap row too
        action = message.action
        if action == "alert_jump":
            self.jump_to_alert_trace(message.argument, position)
        elif action == "go_to_index":
            self.app.push_screen(PromptScreen("Go to trace #", "a trace index"),
                                 self._go_to_index)
        elif action == "search":
            self.app.push_screen(
                PromptScreen("Search op name or type (regex)", "e.g. Log|softmax"),
                self._search_entered)
        elif action in ("search_next", "search_previous"):
            if self.last_search is None:
                self.notify("no search yet: press / first")
            else:
                start = (position or 0) + (1 if action == "search_next" else -1)
                self.search(self.last_search, start, action == "search_next")
        elif action == "first_input":
            context = self.trace_context
            target = next((n for n in (context.inputs if context else ())
                           if n.trace_index is not None), None)
            if target is None:
                self.notify("the selected op has no traced input")
            else:
                graph_list.select_trace(target.trace_index)
        elif action == "show_value":
            if current is not None:
                self.load_value(current)

    def jump_to_alert_trace(self, which: str, current: int | None) -> None:
        target = self.trace_rows.alert_trace(which, current) if self.trace_rows else None
        if target is None:
            self.notify("no alert in the graph traces")
        else:
            self.query_one(GraphExecutionList).select_trace(target)

    def _go_to_index(self, value: str | None) -> None:
        if not value:
            return
        try:
            index = int(value.strip().lstrip("#"))
        except ValueError:
            self.notify(f"not a trace index: {value!r}", severity="error", markup=False)
            return
        if not self.query_one(GraphExecutionList).select_trace(index):
            self.notify(f"trace #{index} is not in the dump", severity="warning")

    def _search_entered(self, value: str | None) -> None:
        if not value:
            return
        _, note = compile_search(value)
        if note is not None:
            self.notify(literal(note), severity="warning", markup=False)
        self.last_search = value
        position = self.query_one(GraphExecutionList).position
        self.search(value, (position or 0) + 1, True)

    @work(thread=True, exclusive=True, group="search")
    def search(self, pattern: str, start: int, forward: bool) -> None:
        found = self.reader.find_trace(pattern, start, forward=forward) if start >= 0 else None
        note = "" if found is not None else f"no {'later' if forward else 'earlier'} match"
        self.post_message(self.JumpToTrace(found, note))

    @on(JumpToTrace)
    def _jump_to_trace(self, message: JumpToTrace) -> None:
        if message.trace_index is None:
            self.notify(message.note)
        else:
            self.query_one(GraphExecutionList).select_trace(message.trace_index)

    @work(thread=True, exclusive=True, group="value")
    def load_value(self, trace_index: int) -> None:
        try:
            value = self.reader.trace_value(trace_index)
        except DumpError as error:
            self.post_message(self.ReadFailed(error))
            return
        context = self.trace_context
        name = f"#{trace_index}"
        if context is not None and context.op is not None and context.trace.index == trace_index:
            name += f" {context.op.name}:{context.trace.slot}"
        self.post_message(self.ValueLoaded(name, value))

    @on(ValueLoaded)
    def _value_loaded(self, message: ValueLoaded) -> None:
        if message.value is None:
            self.notify("no value stored: the dump's mode is not FULL_TENSOR")
            return
        from tfdbg_tui.screens.tensor_value import TensorValueScreen

        self.app.push_screen(TensorValueScreen(message.title, message.value))
