"""The watch tier, `watch` and `unwatch`: leave it on for a whole job; at the first
harmful NaN, the step is replayed fully recorded (docs/instrument.md, "The watch
tier").

Usage, near the top of a training script::

    import instrument
    instrument.watch("/tmp/logdir")

No op is instrumented. Each optimizer update the program traces (Keras ``fit``, a
custom loop's ``optimizer.apply_gradients`` or ``apply``, an overridden
``train_step``) gets one fused finiteness check over the loss, the gradients and the
values the update writes, and the update is gated on it (instrument/watch/gate.py).
The host reads the result from a thread of its own every half second. At the first
hit the job stops by default with `instrument.NonFiniteError`, naming the op, the
line and the step that the replay found, with the last good state and the batch saved
beside the watched run (docs/instrument.md, "The watch tier").
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from instrument.watch.watcher import ON_HIT, ON_HIT_STOP, Watcher
from reader import storage
from reader.contract import RunRecord, WatchMap

_lock = threading.Lock()
_active: tuple[Watcher, Any] | None = None
_atexit_registered = False
# Set while the watch was started on a program's behalf (`watch_for_program`): called
# with (that run's path, the program's run's path) when the program's own call wins.
_on_replaced: Any = None


def watch(
    logdir: str | os.PathLike[str],
    *,
    on_hit: str = ON_HIT_STOP,
    max_replays: int = 1,
    hold_update: bool = True,
) -> str:
    """Watch this process's training steps, writing a watched run into ``logdir``.

    Args:
        logdir: Directory holding runs (created if missing); the watched run and the
            replay of a hit step are two runs in it.
        on_hit: ``"stop"`` (replay the hit step, save the state and the batch, raise
            `NonFiniteError`), ``"skip"`` (the same, then skip that step and watch on,
            up to ``max_replays`` hits; later hits stop), or
            ``"stop_without_replay"``.
        max_replays: How many hits are replayed.
        hold_update: Hold the optimizer's writes back until the changes they make are
            checked, so that a NaN the optimizer makes from finite gradients is not
            written (the default). The new values are held until the check: the step's
            peak memory grows by up to the variables the optimizer writes (the weights and
            Adam's two moments: three times the trained weights). False writes the
            update as it comes, as the optimizer does unwatched: such a NaN is then
            found after it is written (the ``variable`` check), the state before it
            lost, and the rows have no update norms.

    Returns:
        The watched run's directory.

    Raises:
        ValueError: A bad ``on_hit``, or a watch already on with another logdir.
        OSError: ``logdir`` cannot be created or written.
    """
    global _active, _atexit_registered
    if on_hit not in ON_HIT:
        raise ValueError(f"on_hit must be one of {', '.join(ON_HIT)}; got {on_hit!r}")
    if max_replays < 0:
        raise ValueError(f"max_replays must be 0 or more; got {max_replays}")
    logdir_path = (
        os.fspath(logdir) if storage.is_url(logdir) else os.path.abspath(storage.local_path(logdir))
    )
    global _on_replaced
    with _lock:
        replaced = None
        if _active is not None:
            watcher = _active[0]
            if os.path.dirname(watcher.writer.path.rstrip("/")) == logdir_path:
                return str(watcher.writer.path)
            if _on_replaced is None:
                raise ValueError(
                    "tfdbg-tui is watching into another logdir already "
                    f"({watcher.writer.path}); call instrument.unwatch() "
                    "first"
                )
            replaced, on_replaced, _on_replaced = watcher.writer.path, _on_replaced, None
    if replaced is not None:
        unwatch()
    with _lock:
        _active = _start(logdir_path, on_hit, max_replays, hold_update)
        if not _atexit_registered:
            atexit.register(_unwatch_at_exit)
            _atexit_registered = True
        path = str(_active[0].writer.path)
    if replaced is not None:
        on_replaced(replaced, path)
    return path


def watch_for_program(on_replaced: Any, logdir: str) -> str:
    """`watch` on a program's behalf (``python -m instrument --watch``): the program's
    own call, with another logdir, wins (``on_replaced(ours, theirs)`` is called)."""
    global _on_replaced
    path = watch(logdir)
    with _lock:
        _on_replaced = on_replaced
    return path


def unwatch() -> None:
    """Stop watching: the rows not yet read are written and the watched run closed.

    Raises:
        NonFiniteError: A hit that the host had not read before (the job's last steps
            went non-finite): it is handled here, replayed and saved, then raised.
    """
    _stop(handle_hit=True)


def _unwatch_at_exit() -> None:
    _stop(handle_hit=False)


def _stop(*, handle_hit: bool) -> None:
    global _active
    with _lock:
        if _active is None:
            return
        (watcher, hooks), _active = _active, None
    try:
        watcher.close(handle_hit=handle_hit)  # a replay at the close needs the hooks
    finally:
        hooks.remove()


def _start(logdir: str, on_hit: str, max_replays: int, hold_update: bool) -> tuple[Watcher, Any]:
    import platform
    import sys

    import tensorflow as tf

    from instrument.dump.writer import DumpWriter
    from instrument.watch.keras_hooks import WatchHooks
    from reader import format as fmt

    writer = DumpWriter(
        logdir,
        {
            RunRecord.TENSOR_DEBUG_MODE: fmt.NO_TENSOR,
            RunRecord.TF_VERSION: tf.__version__,
            RunRecord.PYTHON_VERSION: platform.python_version(),
            RunRecord.ARGV: list(sys.argv),
            RunRecord.THREAD: threading.current_thread().name,
            RunRecord.WATCH: {
                WatchMap.ON_HIT: on_hit,
                WatchMap.MAX_REPLAYS: max_replays,
                WatchMap.HOLD_UPDATE: hold_update,
            },
        },
        flush_interval_s=0.5,
    )
    watcher = Watcher(writer, on_hit=on_hit, max_replays=max_replays, hold_update=hold_update)
    hooks = WatchHooks(watcher)
    hooks.install()
    return watcher, hooks


__all__ = ["watch", "unwatch"]
