"""The watched update, checked before it is written: the optimizer's writes held back
while its update is traced (instrument/tf_internals/held_writes.py), the change each
makes to a trained variable checked, and the writes made only when every change is
finite.

A NaN or an infinity that the optimizer makes from finite gradients (Adam with
``epsilon=0``, a division by a zero slot, a learning rate that is not finite) is then
found before it is written, like one in the loss or a gradient: the update writes
nothing (not the weights, not the slots, not the iteration counter), and the state
before the step survives for the saved state and the replay.

What is checked: each write into a trained variable (every replica's copy under a
``MirroredStrategy``), by its change: the value added or subtracted, or the value
assigned less the value before. The change is a tensor the optimizer makes anyway,
so the check reads it once (an ``L2Loss``) and copies nothing. Its norm, on the first
replica's copy, is the row's update norm, every step. The slots (Adam's moments) are
held and written with the rest, but not checked: a NaN in a slot reaches the change
it makes to its variable; an infinite one that makes the change zero is found by the
check of the variables (every `gate.WEIGHTS_EVERY`-th step), after it is written.

Not held (`made_as_they_came`): an Embedding's sparse update (``scatter_sub``), and
writes from a ``cond`` of the optimizer's own (Keras' gradient accumulation); their
changes are measured where they are made, into the site's ``update_sums``.
"""

from __future__ import annotations

from typing import Any

from instrument.tf_internals import held_writes
from instrument.tf_internals.held_writes import HeldWrites, WriteConflict
from instrument.watch.norms import checked_norms, norms_of_halves

__all__ = ["HeldUpdate", "WriteConflict", "replayed_update"]


def _replica_copies(variable: Any) -> list[Any]:
    """The ``tf.Variable`` behind a variable (Keras' or TensorFlow's), as each replica's
    copy under a tf.distribute strategy (the first replica's first)."""
    import tensorflow as tf

    tf_variable = variable if isinstance(variable, tf.Variable) else variable.value
    return list(tf.distribute.get_strategy().experimental_local_results(tf_variable))


class HeldUpdate:
    """``with HeldUpdate(variables, sums) as update: apply()``, then `check` and, in a
    ``cond`` on it, `write`."""

    def __init__(self, variables: list[Any], sums: Any) -> None:
        self._count = len(variables)
        measured: dict[int, int] = {}
        self._first: set[int] = set()
        for index, variable in enumerate(variables):
            for k, copy in enumerate(_replica_copies(variable)):
                measured[id(copy.handle)] = index
                if k == 0:
                    self._first.add(id(copy.handle))
        self._sums = sums
        self._nested_first: set[int] = set()
        self._writes = HeldWrites(measured, self._note_nested)

    def __enter__(self) -> HeldUpdate:
        self._writes.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._writes.__exit__(*exc)

    @property
    def made_as_they_came(self) -> int:
        return self._writes.made_as_they_came

    def _note_nested(self, index: int, handle_id: int, change: Any) -> None:
        """A change made in a nested graph (as it came): its ``L2Loss`` added there into
        the site's sums (the first replica's copy only)."""
        import tensorflow as tf

        if handle_id not in self._first:
            return
        self._nested_first.add(index)
        change = getattr(change, "values", change)
        half = tf.nn.l2_loss(tf.cast(change, tf.float32))
        self._sums.scatter_add(tf.IndexedSlices(tf.reshape(half, [1]), tf.constant([index])))

    def check(self) -> tuple[Any, Any]:
        """In the graph, after the update is traced: each trained variable's update norm
        (its changes' on the first replica's copy; NaN where none was seen), and the
        first variable whose change is not finite (-1 when none is)."""
        import tensorflow as tf

        changes = self._writes.changes
        halves = tf.zeros([self._count], tf.float32)
        bad = tf.constant(-1, tf.int64)
        if changes:
            norms, first_bad = checked_norms([change for _, _, change in changes])
            first = [i for i, (_, handle, _) in enumerate(changes) if handle in self._first]
            if first:
                squares = tf.gather(norms, first) ** 2 / 2
                ids = tf.constant([changes[i][0] for i in first], tf.int32)
                halves += tf.math.unsorted_segment_sum(squares, ids, self._count)
            indices = tf.constant([index for index, _, _ in changes], tf.int64)
            bad = tf.where(first_bad < 0, bad, tf.gather(indices, tf.maximum(first_bad, 0)))
        if self._nested_first:
            read = self._sums.read_value()
            halves += read
            with tf.control_dependencies([read]):
                self._sums.assign(tf.zeros([self._count], tf.float32))
        seen = {changes[i][0] for i, (_, h, _) in enumerate(changes) if h in self._first}
        seen |= self._nested_first
        mask = tf.constant([i in seen for i in range(self._count)], tf.bool)
        return tf.where(mask, norms_of_halves(halves), float("nan")), bad

    def write(self) -> None:
        """Build the held writes (in a ``cond`` on `check`)."""
        self._writes.write_held()


def replayed_update(apply: Any) -> None:
    """Trace ``apply()`` (a replay's update) with its writes held and never made to the
    program's variables: the replay computes the update, so that a NaN the optimizer
    makes is recorded, and writes nothing of the program's.

    Each value it would have written is written instead into a variable of the
    watch's own, one a dtype, of no fixed shape (`_replay_scratch`): the replay's graph
    then writes it, as the step's does, so the reader counts a non-finite value that
    reaches it as harmful (an infinite learning rate's infinities would otherwise pass
    for a deliberate constant's, carried on and never written), and a value nothing
    uses would not be traced at all (instrument/tracing/graph_batches.py). The scratch
    variable adopts each value's buffer in turn: it holds no more than the step did.
    Inside XLA, where a variable cannot change its shape, whether each value is finite
    goes into a boolean of the watch's own instead. An update whose writes cannot be
    held is not traced."""
    import tensorflow as tf

    from instrument.tf_internals.graph_frames import in_xla_context

    if not held_writes.installed():
        return
    try:
        with HeldWrites({}) as writes:
            apply()
    except WriteConflict:
        return
    values = writes.held_values()
    if not values:
        return
    with tf.name_scope("tfdbg_tui_watch_replay"):
        if not in_xla_context(tf.compat.v1.get_default_graph()):
            for value in values:
                _replay_scratch(value.dtype).assign(value)
            return
        finite = [tf.reduce_all(tf.math.is_finite(v)) for v in values if v.dtype.is_floating]
        if finite:
            _replay_scratch(tf.bool, shaped=True).assign(tf.reduce_all(tf.stack(finite)))


_scratch: dict[tuple[Any, bool], Any] = {}


def _replay_scratch(dtype: Any, shaped: bool = False) -> Any:
    """A variable of the watch's own, of ``dtype`` and no fixed shape (a scalar with
    ``shaped``), that a replay writes its update's values into (`replayed_update`);
    made once."""
    import tensorflow as tf

    from instrument.tf_internals.eager_runtime import unmirrored_variable

    key = (dtype, shaped)
    if key not in _scratch:
        with tf.init_scope():
            _scratch[key] = unmirrored_variable(
                tf.zeros([] if shaped else [0], dtype),
                "tfdbg_tui_watch_replay",
                shape=None if shaped else tf.TensorShape(None),
            )
    return _scratch[key]
