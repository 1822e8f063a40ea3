"""The batches of a custom loop's watched steps, kept on the host by reference to its
step function's call arguments until the watch has seen the step pass.

A custom loop passes its batch to the step function as arguments. Copying those
tensors inside the step's graph costs a cond over the function's arguments, which
costs 10-20% of a small step (docs/performance.md, "The watch tier"). So the call's
arguments are kept where they already are: `KeptCalls` holds a reference to each
watched call's arguments (tensors are immutable; a NumPy array is copied, since a
loader may fill the same buffer again), from the call until the watch's reading
thread has seen that step pass the check (`fine_before`). Nothing is copied on the
device and nothing is read back: the program's steps get no sync they did not have.

Memory: the batches of the steps the reader has not yet seen, which is the steps of
about half a second (`Watcher`'s poll), at most `KEPT_BYTES` (the oldest are let go
beyond it, and a hit in one of them is stopped and saved but not replayed). A loop
that passes the same tensors every step holds nothing more than it does already, and
they are counted once.

Cost: the training thread pays for each call a few microseconds (an append under a
lock; the common call, a tuple of tensors, is not flattened), and a read by the
reading thread is woken early only when the kept batches grow past `WAKE_BYTES` or
`WAKE_CALLS`: each read is a few eager ops, which a fast step would feel if it came
every few steps (docs/performance.md, the watch tier).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

# The most the kept batches may hold (by their tensors' sizes) before the oldest are
# let go.
KEPT_BYTES = 512 << 20
# What the kept calls may hold, in new tensors' bytes or in calls, before they wake the
# reading thread early (it then lets the fine ones go) rather than at its next poll.
WAKE_BYTES = 64 << 20
WAKE_CALLS = 1024


@dataclass(frozen=True)
class KeptCall:
    """One watched call: the step it ran (the site's step number) and its arguments."""

    step: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    nbytes: int


class KeptCalls:
    """The calls of one watched site's step function not yet seen to pass the check."""

    def __init__(self, budget: int = KEPT_BYTES) -> None:
        self._calls: deque[KeptCall] = deque()
        self._lock = threading.Lock()
        self._budget = budget
        self.next_step = 0
        """The step number the next call runs."""
        self.nbytes = 0
        """What the kept calls hold, by their tensors' sizes."""
        self.dropped_through = -1
        """The last step whose call was let go before it was seen (over the budget)."""
        self._previous: tuple[Any, ...] = ()

    def keep(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Keep a call's arguments as the next step's; returns whether the kept calls
        are past `WAKE_BYTES` or `WAKE_CALLS` (time to let the fine ones go)."""
        args, kwargs, nbytes = _held(args, kwargs, self._previous)
        self._previous = args
        with self._lock:
            self._calls.append(KeptCall(self.next_step, args, kwargs, nbytes))
            self.next_step += 1
            self.nbytes += nbytes
            while self.nbytes > self._budget and len(self._calls) > 1:
                dropped = self._calls.popleft()
                self.nbytes -= dropped.nbytes
                self.dropped_through = dropped.step
            return self.nbytes > WAKE_BYTES or len(self._calls) > WAKE_CALLS

    def fine_before(self, step: int) -> None:
        """Let go of the calls of the steps before ``step``, seen to pass the check."""
        with self._lock:
            while self._calls and self._calls[0].step < step:
                self.nbytes -= self._calls.popleft().nbytes

    def call(self, step: int) -> KeptCall | None:
        """The call of ``step``, if it is still kept."""
        with self._lock:
            return next((c for c in self._calls if c.step == step), None)

    def __len__(self) -> int:
        return len(self._calls)


def _held(
    args: tuple[Any, ...], kwargs: dict[str, Any], previous: tuple[Any, ...]
) -> tuple[Any, Any, int]:
    """The arguments as kept: NumPy arrays copied, and the bytes the tensors hold (a
    positional tensor that is the ``previous`` call's own is counted there, not again)."""
    import numpy as np
    import tensorflow as tf

    if not kwargs and all(tf.is_tensor(a) for a in args):
        # The common call, a tuple of tensors: no array to copy, nothing to flatten.
        return (
            args,
            kwargs,
            sum(
                _tensor_bytes(a)
                for i, a in enumerate(args)
                if i >= len(previous) or a is not previous[i]
            ),
        )
    nbytes = 0
    copied = False

    def held(value: Any) -> Any:
        nonlocal nbytes, copied
        if isinstance(value, np.ndarray):
            copied = True
            nbytes += value.nbytes
            return value.copy()
        if tf.is_tensor(value):
            nbytes += _tensor_bytes(value)
        return value

    leaves = tf.nest.flatten((args, kwargs))
    kept = [held(v) for v in leaves]
    if copied:
        args, kwargs = tf.nest.pack_sequence_as((args, kwargs), kept)
    return args, kwargs, nbytes


def _tensor_bytes(tensor: Any) -> int:
    """A tensor's bytes, where its shape is known (0 for a string's or an unknown one)."""
    import tensorflow as tf

    shape = tensor.shape
    if tensor.dtype == tf.string or not shape.is_fully_defined():
        return 0
    return int(shape.num_elements()) * tensor.dtype.size


def tensor_leaves(call: KeptCall) -> list[tuple[str, Any]]:
    """(name, value) of the call's tensor and array arguments, named by their place in
    the call: ``args[0]``, ``kwargs[labels]``, ``args[1][0]``."""
    import numpy as np
    import tensorflow as tf

    named: list[tuple[str, Any]] = []

    def walk(path: str, value: Any) -> None:
        if isinstance(value, dict):
            for key in value:
                walk(f"{path}[{key}]", value[key])
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(f"{path}[{i}]", item)
        elif isinstance(value, np.ndarray) or (
            tf.is_tensor(value) and value.dtype not in (tf.resource, tf.variant)
        ):
            named.append((path, np.asarray(value)))

    walk("args", list(call.args))
    walk("kwargs", call.kwargs)
    return named
