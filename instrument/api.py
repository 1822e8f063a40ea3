"""`enable_dump_debug_info` and `disable_dump_debug_info`, the public switch: checks the
arguments, opens the writer, installs the callback.

This module imports TensorFlow only when instrumentation is enabled, so that
``import instrument`` stays cheap and works where TensorFlow is absent.
"""

from __future__ import annotations

import atexit
import logging
import os
import platform
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from instrument.non_finite import EagerOpValues, NonFiniteError
from reader import format as fmt
from reader import storage
from reader.contract import ReplayOfMap, RunRecord, TaskMap

_lock = threading.Lock()
_active: _Enabled | None = None
_atexit_registered = False


class _Enabled:
    """What one enable call set up, and the arguments it was made with."""

    def __init__(
        self,
        arguments: tuple[Any, ...],
        callback: Any,
        thread: threading.Thread,
        thread_hook: Any,
        session_hook: Any,
    ) -> None:
        self.arguments = arguments
        self.callback = callback
        self.thread = thread
        self.thread_hook = thread_hook
        self.session_hook = session_hook
        # Set for a run enabled on a program's behalf (`enable_for_program`): a later
        # enable with other arguments, the program's own, replaces it and calls this
        # with (the replaced run's path, the new run's path).
        self.on_replaced: Callable[[str, str], None] | None = None
        # The command that enabled it on the program's behalf ("tfdbg-tui run").
        self.command: str | None = None


def enable_dump_debug_info(
    logdir: str | os.PathLike[str],
    tensor_debug_mode: str = fmt.NO_TENSOR,
    circular_buffer_size: int = 1000,
    op_regex: str | None = None,
    tensor_dtypes: Sequence[Any] | Callable[[Any], bool] | None = None,
    *,
    snapshot_library_sources: bool = False,
    stop_on_alert: bool = False,
    on_alert: str | None = None,
) -> str:
    """Start writing a tfdbg-tui dump of this process into ``logdir``.

    Every eager op and ``tf.function`` call, every op created while a graph is built,
    and every traced tensor computed inside a graph is recorded, with the Python stacks
    and source files that made them. Each process writes its own run directory inside
    ``logdir``, so re-runs and several workers can share one logdir.

    The callback is registered for the calling thread and for every Python thread
    started after this call (on Python 3.12+ also those already running), so work in
    background threads is recorded too. Calling this again with the same
    arguments does nothing; the run is closed at exit or by `disable_dump_debug_info`.

    Args:
        logdir: Directory that holds runs; created if missing. Or an fsspec URL
            (``s3://bucket/logdir``, ``gs://...``: needs ``tfdbg-tui[s3]`` or
            ``[gcs]``), written as closed part objects (docs/format.md).
        tensor_debug_mode: What is recorded of each tensor: ``NO_TENSOR`` (only that
            it was computed), ``CURT_HEALTH``, ``CONCISE_HEALTH``, ``FULL_HEALTH``,
            ``SHAPE`` (numeric summaries), ``FULL_STATS`` (FULL_HEALTH's counts plus
            min, max, mean and standard deviation of the finite elements, to watch
            values drift towards overflow; not one of TensorFlow's modes) or
            ``FULL_TENSOR`` (the values).
        circular_buffer_size: N > 0 keeps (at least) the latest N executions and the
            latest N graph traces on disk; N <= 0 keeps everything. Either way records
            reach the disk within half a second.
        op_regex: Trace only tensors of ops whose type matches (``re.match``), e.g.
            ``"^(MatMul|Relu)$"``.
        tensor_dtypes: Trace only tensors of these dtypes (``tf.DType`` or names), or
            those for which this callable, given a ``tf.DType``, returns True.
        snapshot_library_sources: Also store the text of library source files
            (TensorFlow, Keras, the standard library). Off by default: they are most
            of a dump's bytes and rarely where a bug is.
        stop_on_alert: Stop the program at the first NaN or infinity: the first call
            into TensorFlow after the step (the tf.function call, or the eager op)
            that made it raises `NonFiniteError`, naming the op, its tensor, graph,
            step and the user's line, once the dump holding it is on disk. Needs a
            health mode or ``FULL_TENSOR``, and eager execution (TensorFlow 2). It
            costs one drain of the trace queue per tf.function call. Raised once: a
            program that catches it runs on, still recorded.
        on_alert: What the first NaN or infinity does: ``"raise"`` (the same as
            ``stop_on_alert=True``) or ``"pdb"``: stop in the debugger at the user's
            frame that ran the step, with a variable ``culprit`` (the op, its input and
            output values where the mode kept them, the diagnosis); ``continue`` runs
            on, ``quit`` raises `NonFiniteError` as ``"raise"`` does.

    Returns:
        The path of this process's run directory.

    Raises:
        ValueError: For an unknown ``tensor_debug_mode``, a malformed filter,
            ``stop_on_alert`` with ``NO_TENSOR`` or ``SHAPE`` (they record no values)
            or without eager execution, or when instrumentation is already enabled
            with different arguments.
        OSError: When ``logdir`` cannot be created or written.
    """
    global _active, _atexit_registered
    if on_alert not in (None, "raise", "pdb"):
        raise ValueError(f"on_alert must be 'raise' or 'pdb'; got {on_alert!r}")
    stop = on_alert or ("raise" if stop_on_alert else None)
    if tensor_debug_mode not in fmt.TENSOR_DEBUG_MODES:
        raise ValueError(
            f"unknown tensor_debug_mode {tensor_debug_mode!r}; expected one of "
            f"{', '.join(fmt.TENSOR_DEBUG_MODES)}"
        )
    if (
        tensor_dtypes is not None
        and not callable(tensor_dtypes)
        and not isinstance(tensor_dtypes, (list, tuple))
    ):
        raise ValueError(
            "tensor_dtypes must be a list or tuple of dtypes, or a callable "
            f"taking a tf.DType; got {tensor_dtypes!r}"
        )
    if stop and tensor_debug_mode not in fmt.ALERT_MODES:
        raise ValueError(
            f"stop_on_alert needs a mode that records NaN and infinity "
            f"({', '.join(fmt.ALERT_MODES)}); tensor_debug_mode {tensor_debug_mode!r} "
            "records none"
        )
    if op_regex is not None:
        import re

        try:
            re.compile(op_regex)
        except re.error as error:
            raise ValueError(
                f"op_regex {op_regex!r} is not a valid regular expression: {error}"
            ) from error
    logdir_path = (
        os.fspath(logdir) if storage.is_url(logdir) else os.path.abspath(storage.local_path(logdir))
    )
    arguments = (
        logdir_path,
        tensor_debug_mode,
        int(circular_buffer_size),
        op_regex,
        _dtypes_key(tensor_dtypes),
        bool(snapshot_library_sources),
        stop,
    )
    with _lock:
        replaced = _active
        if _active is not None:
            if _active.arguments == arguments:
                return _active.callback.writer.path
            if _active.on_replaced is None:
                raise ValueError(
                    "tfdbg-tui instrumentation is already enabled with different arguments "
                    f"({_describe(_active.arguments)}); call disable_dump_debug_info() "
                    f"first to start a run with ({_describe(arguments)})"
                )
    if replaced is not None:
        disable_dump_debug_info()
    with _lock:
        _check_writable(logdir_path)
        _active = _start(arguments, tensor_dtypes)
        if not _atexit_registered:
            atexit.register(disable_dump_debug_info)
            _atexit_registered = True
        path: str = _active.callback.writer.path
    if replaced is not None and replaced.on_replaced is not None:
        replaced.on_replaced(replaced.callback.writer.path, path)
    return path


def enable_for_program(
    on_replaced: Callable[[str, str], None],
    logdir: str,
    command: str = "python -m instrument",
    **options: Any,
) -> str:
    """`enable_dump_debug_info` on a program's behalf (``python -m instrument``, or
    ``command``: "tfdbg-tui run").

    The program's own call, if it makes one with other arguments, wins: this run is
    closed, the program's starts, and ``on_replaced(this run's path, the new run's
    path)`` is called; the program is never instrumented twice.
    """
    path = enable_dump_debug_info(logdir, **options)
    with _lock:
        if _active is not None:
            _active.on_replaced = on_replaced
            _active.command = command
    return path


def program_command() -> str | None:
    """The command that enabled the current run on the program's behalf ("tfdbg-tui
    run", "python -m instrument"), or None: the program enabled it itself (or nothing
    is enabled)."""
    with _lock:
        return None if _active is None or _active.on_replaced is None else _active.command


def enable_for_replay(
    logdir: str, replay_of: dict[str, Any], values: Sequence[str] | None = None
) -> str:
    """Record the replay of a watched step (instrument/watch/replay.py): FULL_HEALTH,
    everything kept, the run record's ``replay_of`` naming the watched run and step.
    With ``values`` (op names), its values replay instead: FULL_TENSOR of the graph ops
    of those names only, ``replay_of`` listing them.

    Raises:
        ValueError: A dump is being recorded already (the watch tier and a per-op
            mode are not recorded at once).
    """
    global _active, _atexit_registered
    mode = fmt.FULL_HEALTH if values is None else fmt.FULL_TENSOR
    arguments = (logdir, mode, -1, None, None, False, None)
    link = dict(replay_of)
    if values is not None:
        link[ReplayOfMap.VALUES] = list(values)
    with _lock:
        if _active is not None:
            raise ValueError(
                "a tfdbg-tui dump is being recorded already; the watch tier's "
                "replay needs the recording to itself"
            )
        _active = _start(
            arguments,
            None,
            run_info={RunRecord.REPLAY_OF: link},
            op_names=None if values is None else frozenset(values),
        )
        if not _atexit_registered:
            atexit.register(disable_dump_debug_info)
            _atexit_registered = True
        return str(_active.callback.writer.path)


def disable_dump_debug_info() -> None:
    """Stop recording and close the run: pending traces are written, then the ``end``.

    Does nothing when instrumentation is not enabled. Functions traced while it was
    enabled keep their (now discarded) trace ops until they are retraced.
    """
    global _active
    with _lock:
        if _active is None:
            return
        enabled, _active = _active, None
    from instrument.tf_internals import entry_points, graph_frames

    callback = enabled.callback
    enabled.thread_hook.remove()
    enabled.session_hook.remove()
    # Op callbacks are per thread: from another thread the enabling thread's
    # registration cannot be removed; a closed callback ignores what it is called with.
    if threading.current_thread() is enabled.thread:
        entry_points.remove_op_callback(callback)
    entry_points.remove_function_hooks(callback.on_concrete_function, callback.on_func_graph_traced)
    graph_frames.remove_function_hook(callback.on_function_made)
    callback.close()


def _start(
    arguments: tuple[Any, ...],
    tensor_dtypes: Any,
    run_info: dict[str, Any] | None = None,
    op_names: frozenset[str] | None = None,
) -> _Enabled:
    logdir, mode, buffer_size, op_regex, _, snapshot_library, stop = arguments
    import tensorflow as tf
    from tensorflow.python.framework import ops

    from instrument.dump.writer import DumpWriter
    from instrument.notices import preflight
    from instrument.summaries import TensorFilter
    from instrument.tf_internals import entry_points, graph_frames
    from instrument.tracing.callbacks import DumpingCallback
    from instrument.tracing.session_runs import SessionRunHook
    from instrument.tracing.threads import REACHES_RUNNING_THREADS, ThreadHook

    if stop and not ops.executing_eagerly_outside_functions():
        raise ValueError(
            "stop_on_alert needs eager execution (TensorFlow 2 behaviour); "
            "in a tf.compat.v1 graph use tf.debugging.check_numerics"
        )
    tensor_filter = TensorFilter(mode, op_regex, tensor_dtypes, op_names)
    writer_dtypes = (
        None
        if tensor_dtypes is None
        else (
            [str(getattr(d, "name", d)) for d in tensor_dtypes]
            if isinstance(tensor_dtypes, (list, tuple))
            else [repr(tensor_dtypes)]
        )
    )
    writer = DumpWriter(
        logdir,
        {
            RunRecord.TENSOR_DEBUG_MODE: mode,
            RunRecord.TF_VERSION: tf.__version__,
            RunRecord.PYTHON_VERSION: platform.python_version(),
            RunRecord.ARGV: list(sys.argv),
            RunRecord.OP_REGEX: op_regex,
            RunRecord.TENSOR_DTYPES: writer_dtypes,
            RunRecord.EAGER_MODE: ops.executing_eagerly_outside_functions(),
            RunRecord.THREAD: threading.current_thread().name,
            RunRecord.TASK: distributed_task(os.environ.get("TF_CONFIG")),
            **(run_info or {}),
        },
        circular_buffer_size=buffer_size,
        watch_alerts=buffer_size > 0 or bool(stop),
    )
    callback = DumpingCallback(
        writer,
        mode,
        tensor_filter,
        snapshot_library_sources=snapshot_library,
        stop_on_alert=bool(stop),
        on_alert=_stop_in_pdb if stop == "pdb" else None,
    )
    preflight(
        callback.notices,
        tf,
        circular_buffer_size=buffer_size,
        op_regex=op_regex,
        tensor_dtypes=writer_dtypes,
        # A replay records its own thread's step alone: other threads are not its.
        running_threads_seen=REACHES_RUNNING_THREADS or RunRecord.REPLAY_OF in (run_info or {}),
    )
    entry_points.add_op_callback(callback)
    # Op callbacks are per thread: register in every other thread as it starts.
    thread_hook = ThreadHook(
        lambda: entry_points.add_op_callback(callback), threading.current_thread()
    )
    thread_hook.install()
    entry_points.add_function_hooks(callback.on_concrete_function, callback.on_func_graph_traced)
    graph_frames.install_function_hook(callback.on_function_made)
    session_hook = SessionRunHook(callback.on_session_run)
    session_hook.install()
    logging.getLogger("instrument").info(
        "tfdbg-tui: recording into %s (run directory %s), tensor_debug_mode=%s, "
        "circular_buffer_size=%d (%s)",
        logdir,
        writer.path,
        mode,
        buffer_size,
        f"the latest {buffer_size} kept" if buffer_size > 0 else "everything kept",
    )
    return _Enabled(arguments, callback, threading.current_thread(), thread_hook, session_hook)


def _stop_in_pdb(error: NonFiniteError, held: EagerOpValues | None) -> None:
    """``on_alert="pdb"``'s hook (`instrument.alert_pdb`), told how the dump was enabled."""
    from instrument.alert_pdb import stop_in_pdb

    stop_in_pdb(error, held, program_command())


def _check_writable(logdir: str) -> None:
    if storage.is_url(logdir):
        storage.store_for(logdir)  # fsspec and the scheme's implementation are there
        return  # a bucket's credentials and existence show at the first write
    try:
        os.makedirs(logdir, exist_ok=True)
    except OSError as error:
        raise OSError(
            error.errno, f"cannot create the dump logdir {logdir!r}: {error.strerror}"
        ) from error
    if not os.access(logdir, os.W_OK | os.X_OK):
        raise PermissionError(f"the dump logdir {logdir!r} is not writable")


def _dtypes_key(tensor_dtypes: Any) -> Any:
    if tensor_dtypes is None or callable(tensor_dtypes):
        return tensor_dtypes
    return tuple(str(getattr(d, "name", d)) for d in tensor_dtypes)


def _describe(arguments: tuple[Any, ...]) -> str:
    logdir, mode, buffer_size, op_regex, dtypes, snapshot, stop = arguments
    return (
        f"logdir={logdir!r}, tensor_debug_mode={mode!r}, "
        f"circular_buffer_size={buffer_size}, op_regex={op_regex!r}, "
        f"tensor_dtypes={dtypes!r}, snapshot_library_sources={snapshot}, "
        f"on_alert={stop!r}"
    )


def distributed_task(tf_config: str | None) -> dict[str, Any] | None:
    """This process's place in a multi-worker job, from ``TF_CONFIG``: ``{"type",
    "index", "cluster"}`` (``cluster``: a short id of the cluster spec, the same in
    every process of the job), or None outside one (or when it cannot be parsed)."""
    if not tf_config:
        return None
    import hashlib
    import json

    try:
        config = json.loads(tf_config)
        task, cluster = config.get("task") or {}, config.get("cluster") or {}
        kind, index = str(task["type"]), int(task["index"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    spec = json.dumps(cluster, sort_keys=True).encode()
    return {
        TaskMap.TYPE: kind,
        TaskMap.INDEX: index,
        TaskMap.CLUSTER: hashlib.sha1(spec).hexdigest()[:12],
    }
