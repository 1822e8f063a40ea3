"""Eager tensors and ops by faster routes than the public API's: tensor ids, the
call counter's eager op and host view, the executor's mode, a drained value read in
place (the table in `instrument.tf_internals`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from instrument.tf_internals import debug_once


def tensor_id(tensor: Any) -> int:
    """An eager tensor's id (``EagerTensor._id``), -1 when TensorFlow has none."""
    ident = getattr(tensor, "_id", None)
    if ident is None:
        debug_once("tensor_id", "tfdbg-tui: EagerTensor._id not found; tensor ids are -1")
        return -1
    return ident


def raw_eager_op(
    op_type: str, attrs: tuple[Any, ...], fallback: Callable[..., Any]
) -> Callable[..., Any]:
    """A caller of eager op ``op_type`` (no outputs) on the default device that skips
    the Python op dispatch and the op callbacks (``TFE_Py_Execute``, as TensorFlow's own
    ``execute.quick_execute`` calls it); ``fallback`` (the generated op wrapper, which
    the caller must keep from recording itself) when that internal is missing."""
    try:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import context

        execute = pywrap_tfe.TFE_Py_Execute
        ctx = context.context()
        ctx.ensure_initialized()
        handle = ctx._handle  # pylint: disable=protected-access
    except (ImportError, AttributeError):
        debug_once(
            "raw_eager_op",
            "tfdbg-tui: TFE_Py_Execute not found; the call counter runs through the op wrapper",
        )
        return fallback
    if handle is None:
        return fallback

    def run(*inputs: Any) -> None:
        execute(handle, None, op_type, list(inputs), attrs, 0)

    return run


def host_int64_view(tensor: Any) -> Any:
    """A ``ctypes.c_int64`` over the memory of ``tensor``, an int64 scalar eager tensor
    in host memory, that keeps the tensor alive; None on another device or without
    DLPack. Stores through it change the tensor (and any variable it aliases) in place."""
    import ctypes

    if "CPU" not in (tensor.device or "").upper():
        return None
    try:
        from tensorflow.experimental import dlpack

        class _Exporter:
            def __dlpack__(self, **_: Any) -> Any:
                return dlpack.to_dlpack(tensor)

            def __dlpack_device__(self) -> tuple[int, int]:
                return (1, 0)  # kDLCPU

        array = np.from_dlpack(_Exporter())
    except (ImportError, AttributeError, TypeError, RuntimeError, BufferError) as exc:
        debug_once(
            "host_int64_view",
            "tfdbg-tui: no DLPack view of a host tensor (%s); the "
            "call counter advances by an eager op",
            exc,
        )
        return None
    if array.dtype != np.int64 or array.shape != ():
        return None
    view = ctypes.c_int64.from_address(array.ctypes.data)
    view._owner = array  # type: ignore[attr-defined]  # keeps the tensor's buffer alive
    return view


def executor_is_async() -> Callable[[], bool]:
    """A check of whether the calling thread's eager executor is asynchronous."""
    from tensorflow.python.eager import context

    ctx = context.context()
    try:
        from tensorflow.python import pywrap_tfe

        ctx.ensure_initialized()
        handle = ctx._handle  # pylint: disable=protected-access
        executor_for_thread = pywrap_tfe.TFE_ContextGetExecutorForThread
        is_async, delete = pywrap_tfe.TFE_ExecutorIsAsync, pywrap_tfe.TFE_DeleteExecutor
    except (ImportError, AttributeError):
        handle = None
    if handle is None:
        debug_once(
            "executor_is_async",
            "tfdbg-tui: TFE_ExecutorIsAsync not found; Context.is_async asks instead",
        )
        return ctx.is_async

    def check() -> bool:
        executor = executor_for_thread(handle)
        try:
            return bool(is_async(executor))
        finally:
            delete(executor)

    return check


def host_view(tensor: Any) -> Any:
    """A CPU eager tensor's value as a read-only numpy array sharing its memory
    (``EagerTensor._numpy``; the array keeps the tensor alive), or ``numpy()``'s copy."""
    view = getattr(tensor, "_numpy", None)
    if view is None:
        debug_once(
            "host_view", "tfdbg-tui: EagerTensor._numpy not found; drained values are copied"
        )
        return tensor.numpy()
    array = view()
    if isinstance(array, np.ndarray):
        array.flags.writeable = False  # the tensor's own memory
    return array


def unmirrored_variable(initial_value: Any, name: str, shape: Any = None) -> Any:
    """A variable of one copy, on the default device, even inside a tf.distribute
    strategy's scope (the watch tier's flag, counters and kept batches: written in the
    cross-replica context, or one per replica, never mirrored).

    Made by ``ResourceVariable``'s constructor, which does not go through the variable
    creators a strategy installs (``tf.Variable`` does); without it, ``tf.Variable``.
    """
    import tensorflow as tf

    try:
        from tensorflow.python.ops.resource_variable_ops import ResourceVariable
    except ImportError:
        debug_once(
            "unmirrored_variable",
            "tfdbg-tui: resource_variable_ops.ResourceVariable is gone; the watch's "
            "variables are made by tf.Variable (mirrored under a strategy)",
        )
        return tf.Variable(initial_value, trainable=False, name=name, shape=shape)
    return ResourceVariable(initial_value, trainable=False, name=name, shape=shape)


def eager_mode() -> Any:
    """A context in which ops run eagerly, whatever the program set (``context.eager_mode``):
    the trace queue is an eager resource, drained also where a TF1 program disabled eager
    execution."""
    from tensorflow.python.eager import context

    return context.eager_mode()
