"""Which traced tensors the run's trends are made of: each tensor's role (weight,
gradient, update, slot, activation, loss scale) and its row (a Keras layer, or a
variable outside any layer), from the graphs alone, variables followed across cond
branches.

- **weight**: a forward ``ReadVariableOp`` of a *trained* variable (one whose write an
  optimizer computes from a gradient), one read per variable and graph;
- **gradient**: the gradient handed to the optimizer for a trained variable: walking
  back from the variable's write (``AssignSubVariableOp``...) through the optimizer's
  ops (``IdentityN`` by its slot, a slot variable's read to that slot's own write) to
  the nearest gradient-phase tensors; under a dynamic loss scale, the gradient divided
  by the scale (the value the optimizer applies), not the scaled one;
- **update**: the value an ``AssignSub``/``AssignAdd`` write subtracts or adds;
- **slot**: an optimizer's own variable (Adam's m and v) where the step reads it;
- **activation**: any other forward tensor made inside a layer's call; a ``Relu``'s
  output also counts the share of zero units;
- **loss scale**: every read of a dynamic loss scale's variable (Keras'
  ``LossScaleOptimizer``, found by `reader.analysis.hunt.loss_scale`): a variable named
  like one, or one whose read divides a gradient.

Variables are followed across graphs: an optimizer that runs inside a ``tf.cond``
branch (Keras' loss scaler applies the step only when the gradients are finite) writes
through the branch's placeholders, which `reader.analysis.hunt.branch_inputs` maps to the
tensors of the graph around it (`reader.analysis.hunt.loss_scale.RunGraphs` follows them),
so a write in the branch and a read in the forward pass meet at one variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reader.analysis.hunt.loss_scale import (
    VARIABLE_READS,
    GraphTensor,
    RunGraphs,
    loss_scale_tensors,
    variable_name,
)

if TYPE_CHECKING:
    from reader.model import Op
    from reader.run.run_protocol import Run

# Role codes (0: none).
GRADIENT, UPDATE, WEIGHT, ACTIVATION, SLOT, LOSS_SCALE = 1, 2, 3, 4, 5, 6
_DELTA_WRITES = frozenset({"AssignSubVariableOp", "AssignAddVariableOp"})
_WRITES = _DELTA_WRITES | {"AssignVariableOp"}
_NOT_ACTIVATIONS = frozenset({"ReadVariableOp", "Const", "Placeholder", "Shape", "Cast"})
# How far back from a variable's write its gradient is looked for, in ops.
_GRADIENT_DEPTH = 12
# TensorFlow's name for a variable created without one: every such variable of an
# eager program has it, so it cannot tell one from another (the op that reads it can).
_UNNAMED_VARIABLE = re.compile(r"^Variable(_\d+)?$")
# The loss scale's row (each traced function captures the variable anew: one row for
# all of them).
LOSS_SCALE_ROW = "loss scale"


@dataclass
class Roles:
    """Per trace point: role code and row; the row names in the order first met."""

    role: dict[int, int] = field(default_factory=dict)
    row: dict[int, int] = field(default_factory=dict)
    relu: set[int] = field(default_factory=set)
    names: list[str] = field(default_factory=list)
    is_layer: list[bool] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)

    def row_of(self, name: str, is_layer: bool) -> int:
        if name not in self._index:
            self._index[name] = len(self.names)
            self.names.append(name)
            self.is_layer.append(is_layer)
        return self._index[name]

    def set(self, tp: int | None, role: int, name: str, is_layer: bool) -> None:
        if tp is not None and tp not in self.role:
            self.role[tp] = role
            self.row[tp] = self.row_of(name, is_layer)

    def set_output(self, op: Op, slot: int, role: int, name: str, is_layer: bool) -> None:
        self.set(
            op.trace_points[slot] if slot < len(op.trace_points) else None, role, name, is_layer
        )

    def in_model_order(self) -> Roles:
        """The same roles, the rows ordered by their first trace point."""
        first = [
            min((tp for tp, row in self.row.items() if row == r), default=0)
            for r in range(len(self.names))
        ]
        order = sorted(range(len(self.names)), key=lambda r: first[r])
        new_row = {old: new for new, old in enumerate(order)}
        ordered = Roles(
            role=self.role, row={tp: new_row[r] for tp, r in self.row.items()}, relu=self.relu
        )
        for r in order:
            ordered.row_of(self.names[r], self.is_layer[r])
        return ordered


def _slot_rows(
    slots: list[tuple[Op, str | None, list[tuple[Op, int]]]],
    row_of_gradient: dict[GraphTensor, str],
) -> list[tuple[Op, str]]:
    """Each optimizer slot's first read and its row's name, from the slots' first
    reads, their own names where known, and the gradients they follow.

    A slot is named by its variable where the dump names it (Keras 3:
    ``adam/dense_kernel_momentum``). A dump without ``var`` names a captured variable
    after the op that reads it (``adam/Sub_2/ReadVariableOp/resource``), which says
    nothing: there a slot is the k-th slot of the trained row whose gradient it
    follows (``sequential/dense slot 2``), and the same k-th slot of another graph that
    does name it lends it that name, so one slot is one row in every trace.
    """
    keyed: list[tuple[Op, tuple[str, int], str | None]] = []
    count: dict[tuple[int, str], int] = {}
    for first, own_name, gradient in sorted(slots, key=lambda slot: (slot[0].graph_id, slot[0].id)):
        owner = next(
            (
                row_of_gradient[(op.graph_id, op.name, slot)]
                for op, slot in gradient
                if (op.graph_id, op.name, slot) in row_of_gradient
            ),
            None,
        )
        if owner is None:
            keyed.append((first, (own_name or first.name, 0), own_name))
            continue
        k = count.get((first.graph_id, owner), 0) + 1
        count[(first.graph_id, owner)] = k
        keyed.append((first, (owner, k), own_name))
    names: dict[tuple[str, int], str] = {}
    for _, key, own_name in keyed:
        if own_name is not None:
            names.setdefault(key, own_name)
    return [(first, names.get(key) or f"{key[0]} slot {key[1]}") for first, key, _ in keyed]


def _named_variable(resource: str) -> str | None:
    """The variable's own name, or None when ``resource`` is a capture named after the
    op that reads it (``<op>/resource``, ``<op>/ReadVariableOp/resource``). Keras 3's
    unique suffix (``adam/dense_kernel_momentum/638``) is dropped."""
    name = resource.rsplit(":", 1)[0]
    if name.endswith("/resource") or name.endswith("_readvariableop_resource"):
        return None
    head, _, tail = name.rpartition("/")
    return head if head and tail.isdigit() else variable_name(name)


def assign_roles(reader: Run) -> Roles:
    """Every traced tensor's role and row, the rows in model order (by their first
    trace point)."""
    graphs = RunGraphs(reader)
    reads: dict[GraphTensor, list[Op]] = {}
    writes: dict[GraphTensor, list[Op]] = {}
    for gid, ops in graphs.ops_of.items():
        for op in ops:
            if op.op_type in VARIABLE_READS and op.inputs:
                reads.setdefault(graphs.source(gid, op.inputs[0]), []).append(op)
            elif op.op_type in _WRITES and len(op.inputs) >= 2:
                writes.setdefault(graphs.source(gid, op.inputs[0]), []).append(op)
    scales = loss_scale_tensors(graphs, reads)
    # The variable's own name, where the dumper recorded it (format 2.4) on an op
    # that reads or writes it.
    named = {
        resource: op.variable
        for table in (reads, writes)
        for resource, ops in table.items()
        for op in ops
        if op.variable and not _UNNAMED_VARIABLE.match(op.variable)
    }
    scale_reads = {op.id for resource in scales for op in reads.get(resource, ())}

    def divides_by_scale(op: Op) -> bool:
        """A gradient unscaled: ``g / scale``."""
        if op.op_type != "RealDiv" or len(op.inputs) != 2:
            return False
        divisor = graphs.producer(graphs.source(op.graph_id, op.inputs[1]))
        return divisor is not None and divisor.id in scale_reads

    def gradients_of(write: Op) -> list[tuple[Op, int]]:
        """The nearest gradient-phase tensors behind a write's value (a gradient
        unscaled by a loss scale: the division)."""
        frontier = [graphs.source(write.graph_id, write.inputs[1])]
        seen: set[GraphTensor] = set()
        for _ in range(_GRADIENT_DEPTH):
            found: list[tuple[Op, int]] = []
            nxt: list[GraphTensor] = []
            for tensor in frontier:
                op = graphs.producer(tensor)
                if tensor in seen or op is None:
                    continue
                seen.add(tensor)
                slot = tensor[2]
                if divides_by_scale(op) or graphs.phase(op) == "gradient":
                    found.append((op, slot))
                    continue
                if op.op_type == "IdentityN":
                    inputs = op.inputs[slot : slot + 1]
                    nxt.extend(graphs.source(op.graph_id, ref) for ref in inputs)
                elif op.op_type in VARIABLE_READS and op.inputs:
                    resource = graphs.source(op.graph_id, op.inputs[0])
                    nxt.extend(
                        graphs.source(w.graph_id, w.inputs[1]) for w in writes.get(resource, ())
                    )
                else:
                    nxt.extend(graphs.source(op.graph_id, ref) for ref in op.inputs)
            if found:
                return found
            frontier = nxt
        return []

    roles = Roles()
    phase = graphs.phase
    layer_of_resource: dict[GraphTensor, str | None] = {}
    for resource, readers in reads.items():
        forward = [op for op in readers if phase(op) == "forward"]
        if forward:
            layer_of_resource[resource] = graphs.places.of_op(forward[0]).layer
    # The row of each trained variable's gradient tensors, and the variables that follow
    # a gradient without being read forward: an optimizer's slots.
    row_of_gradient: dict[GraphTensor, str] = {}
    slots: list[tuple[Op, str | None, list[tuple[Op, int]]]] = []
    for resource, written in writes.items():
        if resource in scales:
            continue
        gradient = [g for w in written for g in gradients_of(w)]
        if resource in layer_of_resource:
            if not gradient:
                continue  # a forward-read variable no gradient writes: a metric's
            layer = layer_of_resource[resource]
            name, is_layer = (
                (layer, True)
                if layer
                else (named.get(resource) or variable_name(resource[1]), False)
            )
            for op, slot in gradient:
                roles.set_output(op, slot, GRADIENT, name, is_layer)
                row_of_gradient[(op.graph_id, op.name, slot)] = name
            for w in written:
                if w.op_type in _DELTA_WRITES:
                    value = graphs.source(w.graph_id, w.inputs[1])
                    producer = graphs.producer(value)
                    if producer is not None:
                        roles.set_output(producer, value[2], UPDATE, name, is_layer)
            first_of_graph: dict[int, Op] = {}
            for op in reads[resource]:
                if phase(op) == "forward":
                    first_of_graph.setdefault(op.graph_id, op)
            for op in first_of_graph.values():
                roles.set_output(op, 0, WEIGHT, name, is_layer)
        elif gradient and resource in reads:
            first = reads[resource][0]
            if phase(first) == "optimizer":
                slots.append((first, named.get(resource) or _named_variable(resource[1]), gradient))
    for first, name in _slot_rows(slots, row_of_gradient):
        roles.set_output(first, 0, SLOT, name, False)
    for resource in scales:
        for op in reads.get(resource, ()):
            roles.set_output(op, 0, LOSS_SCALE, LOSS_SCALE_ROW, False)
    for ops in graphs.ops_of.values():
        for op in ops:
            if op.op_type in _NOT_ACTIVATIONS or not op.trace_points or phase(op) != "forward":
                continue
            layer = graphs.places.of_op(op).layer
            if layer is None:
                continue
            for tp in op.trace_points:
                roles.set(tp, ACTIVATION, layer, True)
                if op.op_type == "Relu" and tp is not None:
                    roles.relu.add(tp)
    return roles.in_model_order()
