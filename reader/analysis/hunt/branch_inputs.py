"""What a cond branch's placeholders stand for in the graph around it: the `If` op's
inputs.

A ``tf.cond`` inside a ``tf.function`` is an ``If`` (or ``StatelessIf``) op whose
branches are graphs of their own (``cond_true_1075``, ``cond_false_1076``, their
`Graph.outer_id` the graph of the ``If``). Whatever a branch uses from outside (a
tensor, a variable's resource handle) reaches it as a ``Placeholder`` of the branch, fed
by one of the ``If``'s inputs. TensorFlow (``cond_v2``) makes the branch's inputs the
``If``'s inputs after the predicate, in order; the *true* branch is traced first, so its
placeholders, in the order they were created, are exactly those inputs (the other
branch's own placeholders come in another order, and are not mapped). Our dumper
records neither its own tensors nor the placeholders that capture them: inputs whose
producer is not in the dump are left out on both sides.

Keras' loss scaler applies the optimizer's step in the true branch (it runs only when
the gradients are finite): the weights' writes there name placeholders, and this map
leads them back to the variables the forward pass reads. A branch whose counts or
dtypes do not agree is not mapped at all: no guess.
"""

from __future__ import annotations

from collections.abc import Iterable

from reader.model import Graph, Op, TensorRef

_IF_OPS = frozenset({"If", "StatelessIf"})
# A branch graph's name: the If op's name with "/" as "_", then "_true_<n>".
_TRUE_BRANCH = "_true_"


def true_branch_inputs(
    graphs: Iterable[Graph], ops_of: dict[int, list[Op]]
) -> dict[tuple[int, str], tuple[int, TensorRef]]:
    """Per true-branch placeholder, ``(branch graph id, placeholder op name)``: the
    ``If`` input that feeds it, as ``(outer graph id, input)``.

    Args:
        graphs: The run's graphs.
        ops_of: Each graph's ops, by graph id (graphs not in it are skipped).
    """
    out: dict[tuple[int, str], tuple[int, TensorRef]] = {}
    for graph in graphs:
        name = graph.name or ""
        if graph.outer_id is None or _TRUE_BRANCH not in name or graph.id not in ops_of:
            continue
        prefix = name.rsplit(_TRUE_BRANCH, 1)[0]
        outer = ops_of.get(graph.outer_id, ())
        conds = [
            op for op in outer if op.op_type in _IF_OPS and op.name.replace("/", "_") == prefix
        ]
        if len(conds) != 1:
            continue
        inputs = [ref for ref in conds[0].inputs[1:] if ref.op_id is not None]
        placeholders = [op for op in ops_of[graph.id] if op.op_type == "Placeholder"]
        if len(inputs) != len(placeholders):
            continue
        mapped = dict(zip(placeholders, inputs))
        outer_ops = {op.id: op for op in outer}
        if not all(_same_dtype(op, ref, outer_ops) for op, ref in mapped.items()):
            continue
        for op, ref in mapped.items():
            out[(graph.id, op.name)] = (graph.outer_id, ref)
    return out


def _same_dtype(placeholder: Op, ref: TensorRef, outer: dict[int, Op]) -> bool:
    """Whether the placeholder's dtype is the dtype of the input feeding it (True
    when either is not known)."""
    mine = placeholder.output_dtypes[0] if placeholder.output_dtypes else None
    producer = outer.get(ref.op_id) if ref.op_id is not None else None
    theirs = (
        producer.output_dtypes[ref.slot]
        if producer is not None and ref.slot < len(producer.output_dtypes)
        else None
    )
    return mine is None or theirs is None or mine == theirs
