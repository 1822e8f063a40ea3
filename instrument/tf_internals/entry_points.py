"""Where `instrument` enters TensorFlow: the op callbacks, tf.function's hooks on a
traced graph and on a concrete function, and ``Session.run`` (the table in
`instrument.tf_internals`).

Op callbacks are TensorFlow's own route for a debugger (its dumper stands on them):
without them nothing can be recorded, so they have no fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def add_op_callback(callback: Callable[..., Any]) -> None:
    """Call ``callback`` for every op the calling thread runs eagerly or adds to a graph
    (``op_callbacks.add_op_callback``; op callbacks are per thread)."""
    from tensorflow.python.framework import op_callbacks

    op_callbacks.add_op_callback(callback)


def remove_op_callback(callback: Callable[..., Any]) -> None:
    """Stop calling ``callback`` in the calling thread (``op_callbacks.remove_op_callback``:
    KeyError when this thread did not add it)."""
    from tensorflow.python.framework import op_callbacks

    op_callbacks.remove_op_callback(callback)


def add_function_hooks(
    on_concrete_function: Callable[..., Any], on_func_graph_traced: Callable[..., Any]
) -> None:
    """Call ``on_concrete_function`` for every concrete function tf.function makes, and
    ``on_func_graph_traced`` on every graph once it is traced
    (``transform.CONCRETE_FUNCTION_CALLBACKS``, ``transform.FUNC_GRAPH_TRANSFORMS``)."""
    from tensorflow.python.eager.polymorphic_function import transform

    transform.CONCRETE_FUNCTION_CALLBACKS.append(on_concrete_function)
    transform.FUNC_GRAPH_TRANSFORMS.append(on_func_graph_traced)


def remove_function_hooks(
    on_concrete_function: Callable[..., Any], on_func_graph_traced: Callable[..., Any]
) -> None:
    """Undo `add_function_hooks` (each hook that is still there)."""
    from tensorflow.python.eager.polymorphic_function import transform

    if on_concrete_function in transform.CONCRETE_FUNCTION_CALLBACKS:
        transform.CONCRETE_FUNCTION_CALLBACKS.remove(on_concrete_function)
    if on_func_graph_traced in transform.FUNC_GRAPH_TRANSFORMS:
        transform.FUNC_GRAPH_TRANSFORMS.remove(on_func_graph_traced)


def session_class() -> Any:
    """The class whose ``run`` every TF1 ``Session.run`` goes through
    (``session.BaseSession``, the base of ``tf.compat.v1.Session``)."""
    from tensorflow.python.client import session

    return session.BaseSession
