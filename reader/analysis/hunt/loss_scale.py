"""Which of the run's variables hold a dynamic loss scale, found in its graphs (the harm
analysis and the trends' roles both ask), and `RunGraphs`: the run's graphs read as
one, tensors followed out of cond branches.

Two analyses ask: the harm analysis (`reader.analysis.hunt.harm`: was an overflow in a step
the scaler skipped?) and the trends' roles (`reader.analysis.trends.trend_roles`: the loss
scale's row). A loss scale's variable (Keras' ``LossScaleOptimizer``) is one named like
one (`LOSS_SCALE_NAME`), or one whose read divides a gradient (the scaler unscales the
gradients with ``g / scale``).

The graphs are read as one (`RunGraphs`): ops by graph and name, and tensors followed
out of cond branches to the graph around them (`reader.analysis.hunt.branch_inputs`), since
Keras' loss scaler applies the optimizer's step inside a ``tf.cond``. The trends' roles
walk the same `RunGraphs`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from reader.analysis.hunt.branch_inputs import true_branch_inputs
from reader.analysis.hunt.graph_ops import ops_by_graph
from reader.analysis.hunt.model_place import PlaceFinder

if TYPE_CHECKING:
    from reader.model import Op, TensorRef
    from reader.run.run_protocol import Run

# The op that reads a resource variable.
VARIABLE_READS = frozenset({"ReadVariableOp"})
# A name component of a dynamic loss scale's variable: Keras 3's `dynamic_scale`,
# tf_keras' `current_loss_scale`, TensorFlow 1's `loss_scale` (not
# `loss_scale_optimizer/step_counter`: the scaler's counter).
LOSS_SCALE_NAME = re.compile(r"^(dynamic_scale|current_loss_scale|loss_scale)(_\d+)?$")

# A tensor of the run: (graph id, op name, output slot).
GraphTensor = tuple[int, str, int]


def variable_name(resource: str) -> str:
    """A variable named by its resource tensor: "dense/kernel/ReadVariableOp/resource:0"
    -> "dense/kernel"."""
    name = resource.rsplit(":", 1)[0]
    for suffix in ("/resource", "/ReadVariableOp", "/Cast", "_readvariableop_resource"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or resource


class RunGraphs:
    """The ops of every graph, keyed by graph and name, and variables followed across
    cond branches."""

    def __init__(self, reader: Run) -> None:
        self.places = PlaceFinder(reader)
        self.ops_of: dict[int, list[Op]] = ops_by_graph(reader)
        self.by_name = {(gid, op.name): op for gid, ops in self.ops_of.items() for op in ops}
        self.fed_by = true_branch_inputs(reader.graphs(), self.ops_of)

    def phase(self, op: Op) -> str:
        return self.places.phase_of_op(op)

    def source(self, graph_id: int, ref: TensorRef) -> GraphTensor:
        """The tensor ``ref`` names, followed out of cond branches to the tensor that
        feeds the branch's placeholder."""
        name, slot = ref.name.rsplit(":", 1)[0], ref.slot or 0
        for _ in range(len(self.ops_of) + 1):
            outer = self.fed_by.get((graph_id, name))
            if outer is None:
                break
            graph_id, ref = outer
            name, slot = ref.name.rsplit(":", 1)[0], ref.slot or 0
        return graph_id, name, slot

    def producer(self, tensor: GraphTensor) -> Op | None:
        return self.by_name.get(tensor[:2])


def loss_scale_tensors(graphs: RunGraphs, reads: dict[GraphTensor, list[Op]]) -> set[GraphTensor]:
    """The variables of dynamic loss scales: named like one, or read to divide a
    gradient (Keras' loss scaler unscales the gradients with ``g / scale``)."""
    found = {
        resource
        for resource in reads
        if any(LOSS_SCALE_NAME.match(part) for part in resource[1].split("/"))
    }
    for gid, ops in graphs.ops_of.items():
        for op in ops:
            if op.op_type != "RealDiv" or len(op.inputs) != 2:
                continue
            numerator = graphs.producer(graphs.source(gid, op.inputs[0]))
            divisor = graphs.producer(graphs.source(gid, op.inputs[1]))
            if (
                numerator is not None
                and divisor is not None
                and divisor.op_type in VARIABLE_READS
                and divisor.inputs
                and graphs.phase(numerator) == "gradient"
            ):
                found.add(graphs.source(divisor.graph_id, divisor.inputs[0]))
    return found


def loss_scale_variables(reader: Run) -> list[str]:
    """The names of the run's dynamic loss scale variables (`loss_scale_tensors`),
    sorted; [] when it has none. The harm analysis asks when no graph is named after
    a loss scaler (a scaler built before its first trace names its branches
    ``cond_true_N``)."""
    graphs = RunGraphs(reader)
    reads: dict[GraphTensor, list[Op]] = {}
    for gid, ops in graphs.ops_of.items():
        for op in ops:
            if op.op_type in VARIABLE_READS and op.inputs:
                reads.setdefault(graphs.source(gid, op.inputs[0]), []).append(op)
    return sorted(
        {variable_name(f"{name}:{slot}") for _, name, slot in loss_scale_tensors(graphs, reads)}
    )
