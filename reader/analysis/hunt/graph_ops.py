"""Every op of a run's graphs, as far as the disk still holds them.

The analyses that look for an op by what it is (a tf.data delivery, the optimizer's
learning rate, a loss scaler's variable) read the ops of every graph; a graph whose
definitions left the disk (a damaged or truncated dump) is skipped, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from reader.errors import DumpError
from reader.model import Op

if TYPE_CHECKING:
    from reader.run.run_protocol import Run


def ops_by_graph(reader: Run) -> dict[int, list[Op]]:
    """The ops of each graph whose definitions can be read, by graph id."""
    found = {}
    for graph in reader.graphs():
        try:
            found[graph.id] = reader.graph_ops(graph.id)
        except DumpError:
            continue
    return found


def every_op(reader: Run) -> Iterator[Op]:
    """Each op of every graph whose definitions can be read, graph by graph."""
    for ops in ops_by_graph(reader).values():
        yield from ops
