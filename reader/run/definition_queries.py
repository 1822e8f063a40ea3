"""`DefinitionQueries`: the definition queries of a run, graphs, ops, stacks and source
files (a member of `IndexedRun`, which answers them through it).

A member of `reader.run.indexed_run.IndexedRun` (which answers them through it), apart
because these answer from the definitions alone (`reader.index.definitions`), never
from the big indexes.
"""

from __future__ import annotations

import threading

from reader.errors import UnknownIdError
from reader.index.definitions import Definitions
from reader.model import Frame, Graph, Op, SourceFile, innermost_user_position


class DefinitionQueries:
    """Queries over a run's definitions, under the run's query lock.

    Args:
        defs: The run's definitions, which its loader fills (under ``lock``).
        lock: The run's query lock.
    """

    def __init__(self, defs: Definitions, lock: threading.RLock) -> None:
        self._defs = defs
        self._lock = lock

    def graphs(self) -> list[Graph]:
        """Every graph read, by id."""
        with self._lock:
            return [self._defs.graph(g) for g in self._defs.graph_ids()]

    def graph(self, graph_id: int) -> Graph:
        """A graph by id; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.graph(graph_id)

    def graph_ops(self, graph_id: int) -> list[Op]:
        """The ops of one graph, in creation order."""
        with self._lock:
            return [
                op
                for op in (self._defs.op(i) for i in self._defs.op_ids())
                if op.graph_id == graph_id
            ]

    def op(self, op_id: int) -> Op:
        """An op by id; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.op(op_id)

    def op_by_name(self, graph_id: int, name: str) -> Op | None:
        """An op by graph and name, or None."""
        with self._lock:
            op_id = self._defs.op_id_by_name(graph_id, name)
            return None if op_id is None else self._defs.op(op_id)

    def consumers(self, op_id: int) -> list[tuple[Op, int]]:
        """(consumer op, input index) for each op reading any output of ``op_id``."""
        with self._lock:
            return self._defs.consumers(op_id)

    def stack(self, stack_id: int) -> list[Frame]:
        """A stack's frames, outermost first; frames not read yet are placeholders."""
        with self._lock:
            return self._defs.stack(stack_id)

    def source_file(self, file_id: int) -> SourceFile:
        """A source file and its snapshot; `UnknownIdError` while not defined."""
        with self._lock:
            return self._defs.source_file(file_id)

    def source_line(self, frame: Frame) -> str | None:
        """The text of a frame's line from the snapshot, or None when not recorded."""
        with self._lock:
            return self._defs.line_text(frame)

    def innermost_user_frame(self, stack_id: int | None) -> Frame | None:
        """The innermost frame of user code in a stack, or None."""
        if stack_id is None:
            return None
        with self._lock:
            try:
                frames = self._defs.stack(stack_id)
            except UnknownIdError:
                return None
            position = innermost_user_position(frames)
            return None if position is None else frames[position]
