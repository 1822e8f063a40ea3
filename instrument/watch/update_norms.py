"""The update norms of a watched step: how far the optimizer moved each trained
variable, measured where it writes the variable, every `gate.WEIGHTS_EVERY`-th step.

A Keras optimizer writes through its own ``assign``, ``assign_add`` and ``assign_sub``
(instrument/watch/keras_hooks.py replaces them with wrappers that call `note_write`).
While the gate traces the update of a measured step inside an `UpdateCapture`, each
write to one of the step's trained variables notes its change: the value added or
subtracted, or, for an ``assign``, the new value less the old. That change is a
tensor the optimizer makes anyway, so the norm reads it once (an ``L2Loss``, added
into a variable of one float a trained variable, from whatever graph the write is in)
and copies nothing: no snapshot of the weights.

What it does not see: a write that does not go through those three methods (Keras'
weight decay assigns the variable directly, an optimizer of one's own may call
``variable.assign_sub``); such a variable's norm covers the writes seen, and is NaN
when none was. An Embedding's sparse update is measured by its rows' values (rows
repeated in one update count once each). Under a ``MirroredStrategy`` every replica
writes its copy of a variable with the same change: the first copy written is
measured.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

# The captures being traced. Not per thread: a MirroredStrategy traces each replica's
# writes in a thread of its own.
_lock = threading.Lock()
_open: list[UpdateCapture] = []


def _key(optimizer: Any, variable: Any) -> Hashable:
    """The optimizer's key of a variable: Keras' own (its path; a replica's copy and
    the variable it mirrors share it), else the object's identity."""
    var_key = getattr(optimizer, "_var_key", None)
    try:
        key = var_key(variable) if var_key is not None else None
    except Exception:  # noqa: BLE001 - a private helper's failure costs the norm only
        key = None
    return key if isinstance(key, (str, int)) else id(variable)


class UpdateCapture:
    """The changes an optimizer's writes make to ``variables`` while it is open
    (``with UpdateCapture(optimizer, variables, sums) as capture: apply()``), and their
    sums of squares (`halves`).

    Each change is measured where it is written, in whatever graph the optimizer
    writes from (a ``cond`` of Keras' gradient accumulation, say, whose tensors the
    gate's branch cannot read): its ``L2Loss`` is added there into ``sums`` (a float32
    variable of the site's, one element a variable), which is zeroed when the capture
    opens and read after the update (`halves`). A variable written twice in one
    update counts both changes' squares."""

    def __init__(self, optimizer: Any, variables: list[Any], sums: Any) -> None:
        self._index = {_key(optimizer, v): i for i, v in enumerate(variables)}
        self._count = len(variables)
        self._sums = sums
        self._copy: dict[int, int] = {}  # index -> id of the copy measured

    def __enter__(self) -> UpdateCapture:
        import tensorflow as tf

        self._sums.assign(tf.zeros([self._count], tf.float32))
        with _lock:
            _open.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _open.remove(self)

    def note(self, optimizer: Any, variable: Any, change: Any) -> None:
        import tensorflow as tf

        index = self._index.get(_key(optimizer, variable))
        if index is None:
            return
        with _lock:
            if self._copy.setdefault(index, id(variable)) != id(variable):
                return  # another replica's copy of the same variable
        half = tf.nn.l2_loss(tf.cast(change, tf.float32))
        self._sums.scatter_add(tf.IndexedSlices(tf.reshape(half, [1]), tf.constant([index])))

    def halves(self) -> Any:
        """float32 [variables]: each variable's change's ``L2Loss`` (half its sum of
        squares), NaN where no write was seen. Built after the update, in the graph
        the capture was opened in."""
        import tensorflow as tf

        seen = [index in self._copy for index in range(self._count)]
        return tf.where(tf.constant(seen, tf.bool), self._sums.read_value(), float("nan"))


def note_write(optimizer: Any, variable: Any, value: Any, kind: str) -> None:
    """An optimizer is about to write ``value`` to ``variable`` (``kind``: ``"assign"``,
    ``"add"`` or ``"sub"``): note the change in the open captures that train it."""
    with _lock:
        captures = list(_open)
    if not captures:
        return
    import tensorflow as tf

    values = getattr(value, "values", None)  # an Embedding's rows (IndexedSlices)
    if kind == "assign":
        if values is not None:
            return  # a scatter of new rows: the old ones are not read here
        change = tf.cast(value, variable.dtype) - tf.convert_to_tensor(variable)
    else:
        change = values if values is not None else value
    for capture in captures:
        capture.note(optimizer, variable, change)
