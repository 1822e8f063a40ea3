"""`GraphRegistry`: the graphs, devices and runtime function names of one run, each
defined in the dump once.

The op callback meets a graph at its first op, a device at its first tensor, and a
runtime function name (``__inference_f_12``) when TensorFlow makes the function or
the concrete-function hook reports it; each is written to the dump once, with an id,
before any record that refers to it (docs/format.md).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from instrument.dump.writer import DumpWriter
from instrument.tf_internals import graph_frames


class GraphRegistry:
    """Ids of graphs (and their outer graphs), devices and runtime functions.

    Thread-safe: definitions are made under a lock; a lookup of one already made takes
    none.
    """

    def __init__(self, writer: DumpWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._graph_ids: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._function_graph_ids: dict[str, int] = {}
        self._named_graph_ids: set[int] = set()  # graphs whose `function` is written
        self._device_ids: dict[str, int] = {}

    def device_id(self, name: str) -> int:
        """The id of a device, defining it on first sight."""
        device_id = self._device_ids.get(name)
        if device_id is None:
            with self._lock:
                device_id = self._device_ids.get(name)
                if device_id is None:
                    device_id = self._writer.add_device(name)
                    self._device_ids[name] = device_id
        return device_id

    def graph_id(self, graph: Any) -> int:
        """The id of a graph, defining it (and its outer graphs) on first sight."""
        graph_id = self._graph_ids.get(graph)
        if graph_id is not None:
            return graph_id
        outer = getattr(graph, "outer_graph", None)
        outer_id = self.graph_id(outer) if outer is not None and _is_recorded_graph(outer) else None
        with self._lock:
            graph_id = self._graph_ids.get(graph)
            if graph_id is None:
                graph_id = self._writer.add_graph(getattr(graph, "name", None), outer_id)
                self._graph_ids[graph] = graph_id
        return graph_id

    def learn_function_name(self, name: str, graph: Any) -> int:
        """Runtime function ``name`` runs ``graph``: eager calls of it carry the graph's
        id (`function_graph_id`); returns that id."""
        graph_id = self.graph_id(graph)
        with self._lock:
            self._function_graph_ids[name] = graph_id
            # One graph may run under several names (its __inference_ function and a
            # __forward_ one): the graph record keeps the first.
            if graph_id not in self._named_graph_ids:
                self._named_graph_ids.add(graph_id)
                self._writer.set_graph_function_name(graph_id, name)
        return graph_id

    def function_graph_id(self, op_type: str) -> int | None:
        """The graph id of runtime function ``op_type``, None when not learnt (a function
        traced before the dump was enabled)."""
        return self._function_graph_ids.get(op_type)


def _is_recorded_graph(graph: Any) -> bool:
    """Whether a graph holds ops of the program: FuncGraphs, or a TF1 graph."""
    if hasattr(graph, "outer_graph"):  # a FuncGraph
        return True
    return not graph_frames.eager_rooted()
