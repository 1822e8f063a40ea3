"""What the dumper adds to the program's functions (the trace queue, the call counter,
XLA trace blocks), kept out of what it records.

Graphs that trace their tensors capture the dumper's own resources: the trace queue
and the call counter (instrument/tracing/trace_queue.py), and inside XLA-compiled functions
the trace blocks (instrument/tracing/xla_traces.py). A capture becomes a resource
``Placeholder`` in the function's graph (and in every graph that calls it) and an
input of each eager call of the function. None of them is the program's: a call of
``f(x, y)`` is recorded with its two inputs and its own captures (the user's
variables), and the graphs hold the ops the program made (docs/format.md, "What the
dumper adds").
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from instrument.tf_internals import eager_runtime, graph_frames


class OwnResources:
    """The dumper's own eager resource handles and their captures in graphs.

    Args:
        handles: Eager handles of the dumper's known from the start; those it makes
            later (the trace queue and the call counter when a graph first traces a
            tensor, XLA trace blocks as XLA-compiled graphs are traced) are told with
            `add`.
    """

    def __init__(self, handles: Iterable[Any] = ()) -> None:
        # Replaced, never changed in place: an eager call reads it without a lock.
        self._ids: frozenset[int] = frozenset(eager_runtime.tensor_id(h) for h in handles)
        # Per graph: the names of the tensors that capture our resources.
        self._captures: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def add(self, handle: Any) -> None:
        """One more eager handle of the dumper's own (an XLA trace block)."""
        self._ids = self._ids | {eager_runtime.tensor_id(handle)}

    def program_inputs(self, inputs: Iterable[Any]) -> list[Any]:
        """An eager call's inputs without the dumper's captured resources."""
        ours = self._ids
        return [t for t in inputs if eager_runtime.tensor_id(t) not in ours]

    def is_own_capture(self, graph: Any, outputs: tuple[Any, ...]) -> bool:
        """Whether a Placeholder being created in ``graph`` (its ``outputs``) captures
        one of our resources: an eager handle, or an outer graph's capture of one.
        It is then remembered, so that `program_op_inputs` leaves it out."""
        if len(outputs) != 1 or outputs[0].dtype.name != "resource":
            return False
        source = graph_frames.capture_source()
        if source is None:
            return False
        source_graph = getattr(source, "graph", None)
        if source_graph is None:  # an eager tensor
            own = eager_runtime.tensor_id(source) in self._ids
        else:
            own = source.name in self._captures.get(source_graph, ())
        if own:
            self._captures.setdefault(graph, set()).add(outputs[0].name)
        return own

    def program_op_inputs(self, graph: Any, inputs: Iterable[Any]) -> list[Any]:
        """A graph op's inputs without our captures (a call of a function that traces)."""
        ours = self._captures.get(graph)
        inputs = list(inputs)
        if not ours:
            return inputs
        return [t for t in inputs if t.name not in ours]
