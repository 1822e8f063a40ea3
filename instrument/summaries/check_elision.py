"""Which finiteness checks of a batch of summaries another check of the batch covers,
and the recomputation of covered tensors in the `cond`'s exact branch.

On the stock route (instrument/summaries/summary_ops.py) a tensor's row holds only while the
tensor is finite, and a check (the sum of its elements) says whether it is: one
non-finite check sends the whole batch to the exact kernels. A check is redundant when
the tensor feeds an op whose output is traced in the same batch, with a check of its
own, and that op is bound to carry any NaN or infinity of the tensor into its output:
then the output's check (or, down a chain, a later one) fires whenever the tensor's
would. Dropping the redundant ones takes the extra consumers off most of a step's
tensors, which is what a check costs on a CPU (docs/performance.md).

"Bound to carry" is IEEE arithmetic with every input element reaching the output:
NaN survives +, -, * and division; an infinity survives them or turns into NaN
(inf - inf, inf * 0, inf / inf), still not finite; a sum of terms one of which is not
finite is not finite; sqrt and log keep NaN and +inf and turn -inf into NaN. Ops that
can swallow one (Relu, Maximum, Exp of -inf, Softmax, selects, comparisons, a divisor:
1 / inf = 0) never cover. Every element of the input must reach a non-empty output:
shapes decide that when the graph is built, and when they cannot prove it (a broadcast
against an unknown dimension that may be 0) the check stays.

When a check of the batch does fire, every row is recomputed exactly, and a covered
tensor must be read after all. Reading it there is what the dropped check would have
cost (an extra consumer that keeps TensorFlow from fusing its op with the next, or
from reusing its buffer), so `Recomputer` rebuilds it inside the exact branch from its
op's inputs instead, when the op is one of the pure ones below: the branch repeats, in
the rare step that holds a NaN or an infinity, the few ops the step fused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from instrument.tf_internals.graph_edits import copy_op

# Elementwise ops of one tensor input (input 0) whose output holds exactly its
# elements, or a function of each that keeps NaN and infinity non-finite.
_SAME_ELEMENTS = frozenset(
    {
        "Identity",
        "Snapshot",
        "StopGradient",
        "PreventGradient",
        "Reshape",
        "Squeeze",
        "ExpandDims",
        "Transpose",
        "Neg",
        "Abs",
        "Square",
        "Sqrt",
        "Log",
        "Cast",
    }
)
# Binary elementwise ops with broadcasting: the inputs that carry a non-finite value.
_BROADCASTING = {
    "Add": (0, 1),
    "AddV2": (0, 1),
    "Sub": (0, 1),
    "Mul": (0, 1),
    "SquaredDifference": (0, 1),
    "RealDiv": (0,),
}
# Reductions where each input element adds into one output element (input 0).
_SUMS = frozenset({"Sum", "Mean", "BiasAddGrad", "L2Loss"})
# Ops whose output holds every element of each tensor input (the axis is not one).
_JOINS = frozenset({"ConcatV2", "Pack"})


def covered_checks(tensors: Sequence[Any | None]) -> list[bool]:
    """For each checked tensor of a batch, whether another check of the batch covers it.

    Args:
        tensors: Per summary of the batch, its graph tensor when the summary has a
            check, else None.

    Returns:
        One flag per entry: True where the check may be dropped. Coverage follows the
        graph's data flow, so chains end at a check that stays.
    """
    flags = [False] * len(tensors)
    if sum(t is not None for t in tensors) < 2:
        return flags  # one check (a tensor traced alone, or eagerly) covers nothing
    checked = {_key(t): i for i, t in enumerate(tensors) if t is not None}
    for i, tensor in enumerate(tensors):
        if tensor is None:
            continue
        for op in tensor.consumers():
            if not op.outputs or checked.get(_key(op.outputs[0]), i) == i:
                continue
            if any(
                _carries(op, position)
                for position, source in enumerate(op.inputs)
                if source is tensor
            ):
                flags[i] = True
                break
    return flags


def _key(tensor: Any) -> tuple[str, int]:
    return tensor.op.name, tensor.value_index


def _carries(op: Any, position: int) -> bool:
    """Whether every non-finite element of ``op``'s input ``position`` makes some
    element of its output 0 non-finite (whatever the other inputs hold)."""
    kind = op.type
    output = op.outputs[0]
    if not output.dtype.is_floating:
        return False
    if kind in _SAME_ELEMENTS:
        return position == 0 and op.inputs[0].dtype.is_floating
    if kind in _SUMS:
        # Each element adds into one output element; an input element exists only if
        # every dimension is at least 1, and then so does that output element.
        return position == 0
    if kind == "AddN":
        return True  # its inputs and output have one shape
    if kind in _JOINS:
        return op.inputs[position].dtype.is_floating
    if kind == "BiasAdd":
        # The value has the output's shape; the bias reaches every row of a non-empty
        # output.
        return position == 0 or _nonempty(output)
    if kind in _BROADCASTING:
        return position in _BROADCASTING[kind] and _reaches_output(
            op.inputs[position], op.inputs[1 - position], output
        )
    if kind == "MatMul":
        return _matmul_carries(op, position)
    return False


def _nonempty(tensor: Any) -> bool:
    size = tensor.shape.num_elements()
    return size is not None and size > 0


def _reaches_output(value: Any, other: Any, output: Any) -> bool:
    """Whether every element of ``value`` appears in the broadcast ``output``.

    True when the output is known to be non-empty (a broadcast repeats each element at
    least once), or when ``other`` cannot change ``value``'s shape: each of its
    dimensions (aligned from the right, none beyond ``value``'s rank) is 1, or equals
    ``value``'s, both known.
    """
    if _nonempty(output):
        return True
    value_dims, other_dims = value.shape, other.shape
    if value_dims.rank is None or other_dims.rank is None or other_dims.rank > value_dims.rank:
        return False
    for offset in range(1, other_dims.rank + 1):
        theirs, ours = other_dims[-offset], value_dims[-offset]
        if theirs == 1:
            continue
        if theirs is None or ours is None or theirs != ours:
            return False
    return True


def _matmul_carries(op: Any, position: int) -> bool:
    """MatMul: a[i, j] enters every out[i, k], b[j, k] every out[i, k]; each product
    with a non-finite factor is not finite (inf * 0 is NaN), nor is any sum holding
    one. Needs the other factor's free dimension known to be at least 1."""
    if position not in (0, 1):
        return False
    a, b = op.inputs[0], op.inputs[1]
    if a.shape.rank != 2 or b.shape.rank != 2:
        return False
    if position == 0:
        free = b.shape[0] if op.get_attr("transpose_b") else b.shape[1]
    else:
        free = a.shape[1] if op.get_attr("transpose_a") else a.shape[0]
    return free is not None and free >= 1


# Pure, deterministic ops of one output that `Recomputer` may repeat.
_RECOMPUTABLE = (
    _SAME_ELEMENTS | set(_BROADCASTING) | _SUMS | _JOINS | {"AddN", "BiasAdd", "MatMul", "Relu"}
)
# How many ops deep a recomputation may go before it reads a tensor as it is.
_MAX_DEPTH = 8


class Recomputer:
    """Gives the exact branch each covered tensor, recomputed from its op's inputs.

    Args:
        covered: The covered tensors of the batch.
    """

    def __init__(self, covered: Sequence[Any]) -> None:
        self._covered = {_key(t) for t in covered}
        self._done: dict[tuple[str, int], Any] = {}

    def tensor(self, tensor: Any, depth: int = 0) -> Any:
        """``tensor``'s value in the graph being built (the branch): recomputed when it
        is covered and its op can be repeated, else ``tensor`` itself."""
        key = _key(tensor)
        if key not in self._covered or depth > _MAX_DEPTH:
            return tensor
        if key not in self._done:
            op = tensor.op
            copy = None
            if op.type in _RECOMPUTABLE and len(op.outputs) == 1 and not op.op_def.is_stateful:
                copy = copy_op(op, [self.tensor(t, depth + 1) for t in op.inputs])
            self._done[key] = tensor if copy is None else copy.outputs[0]
        return self._done[key]
