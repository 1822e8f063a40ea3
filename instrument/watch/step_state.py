"""The state a watched step writes besides its optimizer's update, kept as the last
good step left it: which variables, their copies, and when the copies are taken.

A skipped step must leave every variable as the step before left it, and a replay
and the saved state start from there. The gate holds the optimizer's writes back
(instrument/watch/gate.py); what the forward pass writes itself is copied here and
put back by the gate's shut branch:

- **A Keras step** (``fit``, an overridden ``train_step``): the model's
  non-trainable variables (BatchNormalization's moving statistics, Keras' seed
  generators' state), copied before each step's forward pass until the first hit
  (`copy_before_step`).
- **A custom loop's step**: the variables its graph writes that are neither trained
  nor the optimizer's (`written_state`: BatchNormalization's moving statistics, a
  ``tf.random.Generator``'s state), copied after each update the gate let through
  (`take_copies`): what the last good step left is what the next one starts
  from. Their copies start as the variables were when the step was traced. A step
  whose state is larger than `STATE_LIMIT_BYTES` keeps none of it, and says so.

A copy is one variable of the same shape a variable, made once (`keep`): a few
kilobytes for a model's normalization statistics.
"""

from __future__ import annotations

from typing import Any

from instrument.tf_internals.graph_frames import watched_variables
from instrument.watch.norms import value_of

# A custom loop's step whose written state is larger keeps none of it (a frozen
# embedding written by the step, say): a copy a step of that much is not a watch's.
STATE_LIMIT_BYTES = 64 << 20
# Ops that read a variable's handle and never write the variable. Any other reader of
# the handle in the step's graph (an assign, a stateful random op, a cond or a call
# the handle enters) counts as a write.
_READING_OPS = frozenset(
    {"ReadVariableOp", "VarIsInitializedOp", "VariableShape", "ResourceGather", "ResourceGatherNd"}
)
# The prefix of the watch's own variables (its flag, counters, ring, kept batches and
# copies): never state of the program's.
OWN_PREFIX = "tfdbg_tui_"


def _handle(variable: Any) -> Any:
    """A variable's resource handle (a Keras variable's, through its TensorFlow one)."""
    handle = getattr(variable, "handle", None)
    if handle is None:
        handle = getattr(getattr(variable, "value", None), "handle", None)
    return handle


def _step_graph(graph: Any) -> Any:
    """The outermost function graph ``graph`` is in (the step function's)."""
    while getattr(getattr(graph, "outer_graph", None), "building_function", False):
        graph = graph.outer_graph
    return graph


# TensorFlow's legacy stateful random ops: their state is the kernel's own, in no
# variable, so it cannot be kept or put back (tf.random.normal, tf.random.uniform,
# tf.nn.dropout, tf.random.shuffle without a generator).
LEGACY_RANDOM_OPS = frozenset(
    {
        "RandomStandardNormal",
        "RandomUniform",
        "RandomUniformInt",
        "TruncatedNormal",
        "RandomShuffle",
        "Multinomial",
        "RandomGamma",
        "RandomPoisson",
        "RandomPoissonV2",
        "ParameterizedTruncatedNormal",
    }
)


def legacy_random_ops(graph: Any) -> list[str]:
    """The types of the legacy stateful random ops (`LEGACY_RANDOM_OPS`) the step
    function whose graph holds ``graph`` has traced so far: a replay of its step draws
    other values than the step did."""
    step = _step_graph(graph)
    return sorted({op.type for op in step.get_operations() if op.type in LEGACY_RANDOM_OPS})


def written_state(graph: Any, not_state: list[Any]) -> tuple[list[Any], int]:
    """The variables the step function whose graph holds ``graph`` writes, other than
    ``not_state`` (the trained variables and the optimizer's) and the watch's own, and
    their size in bytes. Only what is traced so far is seen: at the optimizer's apply,
    the forward and backward passes."""
    step = _step_graph(graph)
    watched = watched_variables(step)
    if not watched:
        return [], 0
    skip = {id(h) for h in map(_handle, not_state) if h is not None}
    captured = {id(external): internal for external, internal in step.captures}
    state, size = [], 0
    for variable in watched:
        handle = _handle(variable)
        name = str(getattr(variable, "name", ""))
        if handle is None or id(handle) in skip or name.startswith(OWN_PREFIX):
            continue
        placeholder = captured.get(id(handle))
        if placeholder is None:
            continue
        if all(op.type in _READING_OPS for op in placeholder.consumers()):
            continue
        state.append(variable)
        shape = variable.shape
        elements = shape.num_elements() if shape.is_fully_defined() else None
        size += (elements or 0) * variable.dtype.size
    return state, size


def keep(kept_state: list[tuple[Any, Any]], variables: list[Any]) -> None:
    """Make a copy of each of ``variables`` not kept yet (``kept_state``: (variable,
    copy) pairs, extended in place), holding its value now."""
    import tensorflow as tf

    known = {id(v) for v, _ in kept_state}
    with tf.init_scope():
        kept_state.extend(
            (v, tf.Variable(value_of(v), trainable=False, name=OWN_PREFIX + "watch_state"))
            for v in variables
            if id(v) not in known
        )


def _copies(kept_state: list[tuple[Any, Any]], variables: list[Any]) -> list[tuple[Any, Any]]:
    copies = {id(v): kept for v, kept in kept_state}
    return [(v, copies[id(v)]) for v in variables if id(v) in copies]


def copy_before_step(
    kept_state: list[tuple[Any, Any]], variables: list[Any], hit_step: Any
) -> None:
    """In a Keras step's graph, before its forward pass: copy ``variables`` (kept by
    `keep`) while ``hit_step`` (the sticky flag's) is -1, before the first hit."""
    import tensorflow as tf

    if not _copies(kept_state, variables):
        return

    def copy() -> Any:
        take_copies(kept_state, variables)
        return tf.constant(True)

    tf.cond(hit_step < 0, copy, lambda: tf.constant(False))


def take_copies(kept_state: list[tuple[Any, Any]], variables: list[Any]) -> None:
    """In the graph: copy ``variables`` (kept by `keep`) as they are at this point (the
    gate's open branch, after a good update; `copy_before_step`, before the forward
    pass)."""
    for variable, kept in _copies(kept_state, variables):
        kept.assign(value_of(variable))


def restore(kept_state: list[tuple[Any, Any]]) -> None:
    """In the gate's shut branch: put every kept variable back as its copy holds it."""
    for variable, kept in kept_state:
        variable.assign(kept.read_value())
