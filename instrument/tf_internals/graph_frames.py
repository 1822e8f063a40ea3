"""What TensorFlow is building now, told from its stack frames, its names and its
per-thread state: a graph traced by ``tf.function``, a control-flow body, a tf.data
function, a capture, the function made of a graph, AutoGraph's source map (the table
in `instrument.tf_internals`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from instrument.tf_internals import debug_once, internals_present, logger

# -- tf.function tracing: the frame that traces a graph and applies the transforms ----

TRACING_MODULE = "tensorflow.python.eager.polymorphic_function.tracing_compilation"
TRACING_FILE = "tracing_compilation.py"
TRACING_FUNCTION = "_create_concrete_function"
TRACING_GRAPH_LOCAL = "func_graph"
TRANSFORMS_CALL = "apply_func_graph_transforms"


def graph_batching_supported() -> bool:
    """Whether the internals that per-segment batching needs are all where expected.

    Checked once per process. False means every traced tensor gets its own enqueue.
    """
    return internals_present(
        "batching",
        _missing_batching_internals,
        "graph traces use one enqueue per tensor (slower, same traces)",
    )


def _missing_batching_internals() -> str | None:
    from tensorflow.python.framework import ops

    try:
        module = __import__(TRACING_MODULE, fromlist=["_"])
    except ImportError:
        return TRACING_MODULE
    function = getattr(module, TRACING_FUNCTION, None)
    code = getattr(function, "__code__", None)
    if code is None or not (module.__file__ or "").endswith(TRACING_FILE):
        return f"{TRACING_MODULE}.{TRACING_FUNCTION}"
    if TRACING_GRAPH_LOCAL not in code.co_varnames or TRANSFORMS_CALL not in code.co_names:
        return f"{TRACING_FUNCTION}'s {TRACING_GRAPH_LOCAL} and its {TRANSFORMS_CALL} call"
    if not hasattr(ops.Graph(), "_nodes_by_id"):
        return "Graph._nodes_by_id"
    for name in ("_id", "_add_control_input"):
        if not hasattr(ops.Operation, name):
            return f"Operation.{name}"
    return None


def is_traced_by_tf_function(graph: Any) -> bool:
    """Whether ``graph`` is being traced by tf.function, which ends with the transform hook.

    TensorFlow's tracing keeps the graph in a local variable of the function that
    traces it and then applies the hook; the innermost such frame on the stack decides.
    False (one enqueue per tensor) when that frame is not found.
    """
    if not graph_batching_supported():
        return False
    frame = _innermost_frame(TRACING_FUNCTION, TRACING_FILE)
    return frame is not None and frame.f_locals.get(TRACING_GRAPH_LOCAL) is graph


def _innermost_frame(function: str, file_suffix: str) -> FrameType | None:
    """The innermost frame on the calling thread's stack running ``function`` of a file
    whose path ends with ``file_suffix``, or None."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and code.co_filename.endswith(file_suffix):
            return frame
        frame = frame.f_back
    return None


TRACING_OPTIONS_LOCAL = "tracing_options"
TRACING_ARGUMENTS_LOCAL = "placeholder_bound_args"


def traced_call(graph: Any) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None:
    """The Python function tf.function is tracing into ``graph``, with the arguments it
    is called with (placeholders where the call passes tensors), or None.

    Found in the frame of TensorFlow's tracing that holds ``graph`` (its
    ``tracing_options.python_function`` and ``placeholder_bound_args``): the watch
    tier's replay calls the function again, fully recorded, on the values kept. The
    function is the one ``tf.function`` wraps (``python_function.__wrapped__``):
    ``python_function`` itself enters the original's XLA context
    (``OptionalXlaContext(jit_compile)``), so a replay of a step compiled with XLA
    would be compiled whatever its own ``jit_compile`` said.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if (
            code.co_name == TRACING_FUNCTION
            and code.co_filename.endswith(TRACING_FILE)
            and frame.f_locals.get(TRACING_GRAPH_LOCAL) is graph
        ):
            options = frame.f_locals.get(TRACING_OPTIONS_LOCAL)
            bound = frame.f_locals.get(TRACING_ARGUMENTS_LOCAL)
            function = getattr(options, "python_function", None)
            if function is None or bound is None:
                debug_once(
                    "traced_call",
                    "tfdbg-tui: tf.function's tracing frame has no %s.python_function or %s",
                    TRACING_OPTIONS_LOCAL,
                    TRACING_ARGUMENTS_LOCAL,
                )
                return None
            return getattr(function, "__wrapped__", function), tuple(bound.args), dict(bound.kwargs)
        frame = frame.f_back
    return None


# -- a graph's ops in the order they were created ------------------------------------


def op_id(op: Any) -> int:
    """Where ``op`` stands in the order its graph's ops were created (``Operation._id``;
    `graph_batching_supported` checks it is there)."""
    return int(op._id)


def ops_by_id(graph: Any) -> dict[int, Any]:
    """Every op of ``graph`` by its `op_id` (``Graph._nodes_by_id``; checked with it)."""
    return graph._nodes_by_id


def is_stateful(op: Any) -> bool:
    """Whether ``op`` has effects beyond its outputs (``Operation._is_stateful``); True
    (kept alive) when TensorFlow does not say."""
    stateful = getattr(op, "_is_stateful", None)
    if stateful is None:
        debug_once(
            "is_stateful",
            "tfdbg-tui: Operation._is_stateful not found; values nothing uses are traced",
        )
        return True
    return bool(stateful)


def in_xla_context(graph: Any) -> bool:
    """Whether ``graph`` or a graph it is nested in is compiled by XLA
    (``control_flow_util.GraphOrParentsInXlaContext``)."""
    from tensorflow.python.ops import control_flow_util

    return bool(control_flow_util.GraphOrParentsInXlaContext(graph))


# -- control-flow bodies: graphs while_v2 and cond_v2 make functions of -------------

# while_v2 and cond_v2 build each body, condition and branch (and their gradients) with
# `func_graph_from_py_func`, then make it a function with
# `control_flow_util_v2.create_new_tf_function`, which applies the same transforms hook
# as tf.function's tracing first.
FUNC_GRAPH_MODULE = "tensorflow.python.framework.func_graph"
FUNC_GRAPH_FILE = "func_graph.py"
FUNC_GRAPH_BUILDER = "func_graph_from_py_func"
FUNC_GRAPH_LOCAL = "func_graph"
CONTROL_FLOW_FILES = ("while_v2.py", "cond_v2.py")
CONTROL_FLOW_UTIL_MODULE = "tensorflow.python.ops.control_flow_util_v2"
CONTROL_FLOW_FUNCTION_MAKER = "create_new_tf_function"
# A while loop's condition: the runtime inlines it for its output alone (`GraphBatch`).
WHILE_CONDITION_GRAPH = "WhileCondFuncGraph"


def is_control_flow_body(graph: Any) -> bool:
    """Whether ``graph`` is a while loop's body or condition, or a cond or case branch
    (or the gradient of one), being built by while_v2 or cond_v2: a graph that ends with
    the transform hook, like one traced by tf.function.

    The innermost ``func_graph_from_py_func`` frame building ``graph`` decides, by the
    file of its caller. False when that frame is not found, or when the internals are
    not where expected (then its traced tensors get one enqueue each).
    """
    if not graph_batching_supported() or not internals_present(
        "body_batching",
        _missing_body_batching_internals,
        "control-flow bodies enqueue each traced tensor",
    ):
        return False
    frame = _innermost_frame(FUNC_GRAPH_BUILDER, FUNC_GRAPH_FILE)
    if frame is None:
        return False
    caller = frame.f_back
    return (
        frame.f_locals.get(FUNC_GRAPH_LOCAL) is graph
        and caller is not None
        and caller.f_code.co_filename.endswith(CONTROL_FLOW_FILES)
    )


def _missing_body_batching_internals() -> str | None:
    try:
        builder_module = __import__(FUNC_GRAPH_MODULE, fromlist=["_"])
        util_module = __import__(CONTROL_FLOW_UTIL_MODULE, fromlist=["_"])
    except ImportError as error:
        return str(error)
    builder = getattr(getattr(builder_module, FUNC_GRAPH_BUILDER, None), "__code__", None)
    if builder is None or FUNC_GRAPH_LOCAL not in builder.co_varnames:
        return f"{FUNC_GRAPH_MODULE}.{FUNC_GRAPH_BUILDER}'s {FUNC_GRAPH_LOCAL}"
    maker = getattr(getattr(util_module, CONTROL_FLOW_FUNCTION_MAKER, None), "__code__", None)
    if maker is None or TRANSFORMS_CALL not in maker.co_names:
        return f"{CONTROL_FLOW_UTIL_MODULE}.{CONTROL_FLOW_FUNCTION_MAKER}'s {TRANSFORMS_CALL}"
    return None


# -- tf.distribute: ops of several devices in one graph -------------------------------


def spans_local_devices() -> bool:
    """Whether ops are being built under a tf.distribute strategy that has several
    devices in this process (MirroredStrategy over GPUs or logical CPUs, in its
    replica or cross-replica context).

    Such a graph holds every device's part of a collective (an all-reduce, a gather),
    and each part waits for the others: the debugger must add no order between the
    devices' ops. A strategy whose devices cannot be told counts as several.
    """
    from tensorflow.python.distribute import distribute_lib

    if not distribute_lib.has_strategy():
        return False
    try:
        devices = distribute_lib.get_strategy().extended.worker_devices
    except (AttributeError, NotImplementedError, RuntimeError, ValueError):
        return True
    return len(devices) > 1


# -- function names: __forward_* / __backward_* functions and their graphs ------------

_hook_lock = threading.Lock()
_original_from_func_graph: Callable[..., Any] | None = None
_wrapper: Callable[..., Any] | None = None
_function_listener: Callable[[str, Any], None] | None = None


def install_function_hook(listener: Callable[[str, Any], None]) -> bool:
    """Call ``listener(name, graph)`` for every function TensorFlow makes of a FuncGraph.

    Wraps ``atomic_function.from_func_graph``, through which every runtime function
    (``__inference_*``, ``__forward_*``, ``__backward_*``) is made. False when it is not
    there (the listener is then never called).
    """
    global _original_from_func_graph, _wrapper, _function_listener
    with _hook_lock:
        try:
            from tensorflow.python.eager.polymorphic_function import atomic_function
        except ImportError:
            atomic_function = None
        original = getattr(atomic_function, "from_func_graph", None)
        if original is None:
            debug_once(
                "from_func_graph",
                "tfdbg-tui: atomic_function.from_func_graph not "
                "found; calls of __forward_/__backward_ functions get no graph id",
            )
            return False
        if _original_from_func_graph is None:
            _original_from_func_graph = original

            def from_func_graph(name: Any, graph: Any, *args: Any, **kwargs: Any) -> Any:
                listener = _function_listener
                if listener is not None:
                    try:
                        listener(name.decode() if isinstance(name, bytes) else str(name), graph)
                    except Exception:  # never break TensorFlow's tracing
                        logger.debug("tfdbg-tui: function hook failed", exc_info=True)
                return original(name, graph, *args, **kwargs)

            atomic_function.from_func_graph = _wrapper = from_func_graph
        _function_listener = listener
        return True


def remove_function_hook(listener: Callable[[str, Any], None]) -> None:
    """Stop calling ``listener``; restore TensorFlow's function when it is ours."""
    global _original_from_func_graph, _wrapper, _function_listener
    with _hook_lock:
        if _function_listener == listener:
            _function_listener = None
        if _original_from_func_graph is None or _function_listener is not None:
            return
        from tensorflow.python.eager.polymorphic_function import atomic_function

        if atomic_function.from_func_graph is _wrapper:  # else someone wrapped ours
            atomic_function.from_func_graph = _original_from_func_graph
            _original_from_func_graph = _wrapper = None


# -- graphs by their names, and the program they belong to -----------------------------

# tf.data names the graph of a transformation's function after both: "Dataset.map()"
# and the function `grab_batch` make "Dataset_map_grab_batch" (structured_function.py).
DATASET_FUNCTION_PREFIX = "Dataset_"


def is_dataset_function(graph: Any) -> bool:
    """Whether ``graph`` is the graph of a tf.data transformation's function."""
    return (getattr(graph, "name", None) or "").startswith(DATASET_FUNCTION_PREFIX)


# The functions tf.data's multi-device iterator and ``copy_to_device`` run on the
# destination device, each a ``RemoteCall`` of a function on the source device
# (multi_device_iterator_ops.py, prefetching_ops.py). tf.data runs them on that device
# alone: a resource of another device (the trace queue, the call counter) cannot be
# reached from them.
REMOTE_DATASET_FUNCTIONS = frozenset(
    {"_remote_init_func", "_remote_next_func", "_remote_finalize_func"}
)


def is_remote_dataset_function(graph: Any) -> bool:
    """Whether ``graph`` is one of tf.data's functions that run on an iterator's
    destination device and call the source device (`REMOTE_DATASET_FUNCTIONS`)."""
    return getattr(graph, "name", None) in REMOTE_DATASET_FUNCTIONS


def eager_rooted() -> bool:
    """Whether the graph being built now belongs to an eager (TF2) program.

    ``ops.executing_eagerly_outside_functions()`` says so, except in a TF1 program that
    disabled eager execution after TensorFlow's context had started (enable before
    ``disable_eager_execution``): inside a ``while_v2`` body of its default graph it
    says True. The process-wide ``context.default_execution_mode`` settles it.
    """
    from tensorflow.python.eager import context
    from tensorflow.python.framework import ops

    if not ops.executing_eagerly_outside_functions():
        return False
    mode = getattr(context, "default_execution_mode", None)
    if mode is None:
        debug_once(
            "default_execution_mode",
            "tfdbg-tui: context.default_execution_mode "
            "not found; a TF1 program's while bodies may be taken for TF2 graphs",
        )
        return True
    return mode == context.EAGER_MODE


# A function graph captures an outer tensor through a Placeholder made in this
# method of `FunctionCaptures` (capture_container.py), with the outer tensor in its
# ``tensor`` local; the Placeholder's op callback runs before the capture is registered
# in the graph.
CAPTURE_MODULE = "tensorflow.core.function.capture.capture_container"
CAPTURE_CLASS = "FunctionCaptures"
CAPTURE_HELPER = "_create_placeholder_helper"
CAPTURE_HELPER_FILE = "capture_container.py"
CAPTURE_SOURCE_LOCAL = "tensor"


def capture_source() -> Any:
    """The outer tensor whose capture is making the Placeholder being created now, or
    None: not a capture (a function's own resource argument), or TensorFlow no longer
    captures in `CAPTURE_HELPER` (said once, checked once per process)."""
    if not internals_present(
        "capture_source",
        _missing_capture_helper,
        "the placeholders of the dumper's own captures are recorded",
    ):
        return None
    frame = _innermost_frame(CAPTURE_HELPER, CAPTURE_HELPER_FILE)
    return None if frame is None else frame.f_locals.get(CAPTURE_SOURCE_LOCAL)


def _missing_capture_helper() -> str | None:
    try:
        module = __import__(CAPTURE_MODULE, fromlist=["_"])
    except ImportError:
        return CAPTURE_MODULE
    helper = getattr(getattr(module, CAPTURE_CLASS, None), CAPTURE_HELPER, None)
    code = getattr(helper, "__code__", None)
    if (
        code is None
        or CAPTURE_SOURCE_LOCAL not in code.co_varnames
        or not code.co_filename.endswith(CAPTURE_HELPER_FILE)
    ):
        return f"{CAPTURE_CLASS}.{CAPTURE_HELPER} (its {CAPTURE_SOURCE_LOCAL} argument)"
    return None


def autograph_source_mappers(thread_ident: int) -> Any:
    """TensorFlow's AutoGraph source-mapper stack of a thread, or None."""
    tf_stack = sys.modules.get("tensorflow.python.util.tf_stack")
    if tf_stack is None:
        return None
    stacks = getattr(tf_stack, "_source_mapper_stacks", None)
    if stacks is None:
        debug_once(
            "source_mapper",
            "tfdbg-tui: tf_stack._source_mapper_stacks not found; "
            "AutoGraph frames are not mapped back to the user's lines",
        )
        return None
    return stacks.get(thread_ident)


# How many graphs out a variable's capture is followed (a cond branch in a while body
# in a tf.function is three).
_CAPTURE_DEPTH = 8


def captured_variable_name(graph: Any, tensor: Any) -> str | None:
    """The name of the ``tf.Variable`` whose handle ``tensor`` stands for in ``graph``:
    the placeholder a function graph (or a cond or loop body in it) captured the
    variable's eager handle into; None when it is not such a capture or the variable
    is not known.

    The capture is followed out through the graphs with the public ``captures``; the
    variable is found among those the outermost function graph watched
    (``FuncGraph._watched_variables``: a variable is watched when it is read, before
    its ``ReadVariableOp`` is made).
    """
    for _ in range(_CAPTURE_DEPTH):
        captures = getattr(graph, "captures", None)
        if captures is None:
            return None
        external = next((ext for ext, internal in captures if internal is tensor), None)
        if external is None:
            return None
        outer = getattr(external, "graph", None)  # None: an eager handle
        if outer is None:
            return _watched_variable_name(graph, external)
        graph, tensor = outer, external
    return None


def watched_variables(graph: Any) -> list[Any] | None:
    """The variables a function graph being traced has read so far
    (``FuncGraph._watched_variables``), or None when TensorFlow no longer keeps them
    (then a watched custom loop's step keeps no state but its optimizer's)."""
    watched = getattr(graph, "_watched_variables", None)
    if watched is None:
        debug_once(
            "watched_variables",
            "FuncGraph._watched_variables is missing: variables in function graphs "
            "are named after the ops that read them, and a watched custom loop keeps "
            "no state but its optimizer's",
        )
        return None
    return list(watched)


def _watched_variable_name(graph: Any, handle: Any) -> str | None:
    watched = watched_variables(graph)
    if watched is None:
        return None
    for variable in watched:
        if getattr(variable, "handle", None) is handle:
            name = getattr(variable, "name", None)
            return name.rsplit(":", 1)[0] if isinstance(name, str) else None
    return None


def compiled_with_xla(function: Any) -> bool:
    """Whether the ``tf.function`` object ``function`` compiles with XLA
    (``jit_compile=True``): its ``_jit_compile``, which TensorFlow does not expose."""
    compiled = getattr(function, "_jit_compile", None)
    if compiled is None:
        debug_once(
            "compiled_with_xla",
            "tfdbg-tui: tf.function objects have no _jit_compile; a watched custom "
            "loop's step is replayed without XLA only",
        )
    return compiled is True
