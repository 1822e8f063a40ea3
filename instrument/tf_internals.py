"""The TensorFlow internals `instrument` relies on beyond public APIs, each fail-safe.

Every dependency on a private name (a module function, a private attribute, a stack
frame's function name) is checked before use. When TensorFlow no longer has it, the
instrumentation falls back to a slower or less precise route that still records
correct traces, and says so once in a debug-level log message (logger
``instrument.tf_internals``); it never breaks the user's program and never silently
drops traces.

| internal | used for | when missing |
| --- | --- | --- |
| frame ``_create_concrete_function`` in ``tracing_compilation.py`` (its ``func_graph`` local, its call of ``apply_func_graph_transforms``) | knowing a graph is traced by ``tf.function``, whose end the transform hook reports: per-segment batched enqueues | one enqueue per traced tensor |
| ``Graph._nodes_by_id``, ``Operation._id``, ``Operation._add_control_input`` | cutting a graph into segments at nested ops | one enqueue per traced tensor |
| frame ``func_graph_from_py_func`` in ``func_graph.py`` (its ``func_graph`` local) called from ``while_v2.py`` or ``cond_v2.py``; ``control_flow_util_v2.create_new_tf_function`` calling ``apply_func_graph_transforms``; the class name ``WhileCondFuncGraph`` | knowing a graph is a while loop's body or condition or a cond branch, which ends with the transform hook: batched enqueues once a run (an iteration) | one enqueue per traced tensor in those graphs |
| ``atomic_function.from_func_graph`` | the graphs of ``__forward_*``/``__backward_*`` functions (eager calls under a ``GradientTape``) | those executions' ``graph`` is nil |
| ``tf_stack._source_mapper_stacks`` | mapping AutoGraph-generated frames to the user's lines | frames stay in the generated code |
| ``EagerTensor._id`` | eager tensor ids (``in``, ``out``) | ids are -1 |
| ``Operation._add_control_input`` (TF1 route) | a TF1 placeholder's consumers wait for its trace | TF1 placeholders are not traced (a ``tf1_untraced`` notice says so) |
| ``FuncGraph.deferred_internal_captures`` | keeping a traced graph's call-time captures (MultiWorkerMirroredStrategy's collective keys) the last inputs after the trace queue is captured late | a function with call-time captures fails when called (never seen: the attribute is as old as call-time captures) |
| eager ``ReadVariableOp`` returning the variable's own buffer; ``tf.experimental.dlpack.to_dlpack`` | advancing the call counter by a store into the variable's host memory (0.04 us) instead of an eager op (instrument/tracing/call_counter.py; checked when the counter is made) | the eager op below |
| ``pywrap_tfe.TFE_ContextGetExecutorForThread``, ``TFE_ExecutorIsAsync``, ``TFE_DeleteExecutor`` | asking, after each eager function call, whether the thread's executor is asynchronous (0.4 us), without ``Context.is_async``'s ``Executor`` object, whose finalizer waits for the executor (1 us) | ``Context.is_async`` |
| ``pywrap_tfe.TFE_Py_Execute``, ``Context._handle`` | the call counter's eager increment (a GPU's counter, an asynchronous executor), without the Python op dispatch (4-27 us, where the generated op wrapper costs ~100 us) | the generated op wrapper |
| ``EagerTensor._numpy`` | reading a drained FULL_TENSOR batch (megabytes a step) in place, where ``numpy()`` copies it | ``numpy()`` |
| ``Graph._create_op_internal`` | recomputing, inside the exact-rows branch of a summary batch, a tensor whose check another covers, from its op's inputs (instrument/summaries/check_elision.py) | the branch reads the tensor itself (it stays exact; fusions around that tensor are lost) |
| ``Operation._add_control_input`` (variable writes) | the ops that write a variable wait for the summary batch's ``If`` (or FULL_TENSOR's values concat) that holds the value read from it: the variable is updated in place, not copied first | a write that runs first copies the variable (the traces stay exact) |
| ``Operation._set_attr``, attribute ``_lower_using_switch_merge`` | a segment's summary ``cond`` kept a functional ``If``: its untaken branch (a kernel for every tensor) is not visited as dead ops each step | the ``cond`` is lowered to ``Switch``/``Merge`` as TensorFlow does by default |
| tf.data's name for a transformation's function graph, ``Dataset_<transformation>_<function>`` (``structured_function.py``) | not tracing a tf.data function's inputs (dataset elements: Keras' ``fit`` on arrays passes the whole arrays to its map at every step) | they are traced (exact; a kernel over the whole element each call) |
| tf.data's names ``_remote_init_func``, ``_remote_next_func``, ``_remote_finalize_func`` (``multi_device_iterator_ops.py``, ``prefetching_ops.py``) | recording, not tracing, the functions a multi-device iterator (``MirroredStrategy``'s input) or ``copy_to_device`` runs on the destination device: tf.data runs them on that device alone, where the trace queue and the call counter cannot be reached; their values are the source device's, traced there | such an iterator's call fails with "Could not find variable tfdbg_tui_calls_..." (the conformance suite's MirroredStrategy scenarios catch it) |
| frame ``FunctionCaptures._create_placeholder_helper`` in ``capture_container.py`` (its ``tensor`` local) | telling the Placeholder that captures one of the dumper's own resources (the trace queue, the call counter, XLA trace blocks) into a function graph, so that it is not recorded as the program's op (instrument/tracing/own_resources.py) | those placeholders are recorded (named by number), as the graph's inputs |
| ``context.default_execution_mode`` | telling a TF1 program's graphs (eager execution disabled after the context started) from a TF2 program's | ``executing_eagerly_outside_functions`` alone, which says True inside a while body of such a TF1 graph |
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

_logged: set[str] = set()
_logged_lock = threading.Lock()


def debug_once(key: str, message: str, *args: Any) -> None:
    """Log ``message`` at debug level the first time ``key`` is seen in this process."""
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.debug(message, *args)


# Ops that run other graphs (bodies, branches, functions): where instrument/tracing/graph_batches.py
# cuts a graph into segments, and never made to wait by `defer_variable_writes`.
NESTED_GRAPH_OPS = frozenset({
    "While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase",
    "PartitionedCall", "StatefulPartitionedCall",
})


# -- tf.function tracing: the frame that traces a graph and applies the transforms ----

TRACING_MODULE = "tensorflow.python.eager.polymorphic_function.tracing_compilation"
TRACING_FILE = "tracing_compilation.py"
TRACING_FUNCTION = "_create_concrete_function"
TRACING_GRAPH_LOCAL = "func_graph"
TRANSFORMS_CALL = "apply_func_graph_transforms"

# Per group of internals (`_internals_present`): whether all were found.
_internals_found: dict[str, bool] = {}


def _internals_present(key: str, find_missing: Callable[[], str | None],
                       consequence: str) -> bool:
    """Whether ``find_missing`` found nothing missing; checked once per process, and
    what is missing logged once at debug level, followed by ``consequence``."""
    found = _internals_found.get(key)
    if found is None:
        missing = find_missing()
        if missing:
            debug_once(key, "tfdbg-tui: %s not found in this TensorFlow; " + consequence,
                       missing)
        found = _internals_found[key] = not missing
    return found


def graph_batching_supported() -> bool:
    """Whether the internals that per-segment batching needs are all where expected.

    Checked once per process. False means every traced tensor gets its own enqueue.
    """
    return _internals_present("batching", _missing_batching_internals,
                              "graph traces use one enqueue per tensor (slower, same traces)")


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
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == TRACING_FUNCTION and code.co_filename.endswith(TRACING_FILE):
            return frame.f_locals.get(TRACING_GRAPH_LOCAL) is graph
        frame = frame.f_back
    return False


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
    if not graph_batching_supported() or not _internals_present(
            "body_batching", _missing_body_batching_internals,
            "control-flow bodies enqueue each traced tensor"):
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == FUNC_GRAPH_BUILDER and code.co_filename.endswith(FUNC_GRAPH_FILE):
            caller = frame.f_back
            return (frame.f_locals.get(FUNC_GRAPH_LOCAL) is graph and caller is not None
                    and caller.f_code.co_filename.endswith(CONTROL_FLOW_FILES))
        frame = frame.f_back
    return False


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
            debug_once("from_func_graph", "tfdbg-tui: atomic_function.from_func_graph not "
                       "found; calls of __forward_/__backward_ functions get no graph id")
            return False
        if _original_from_func_graph is None:
            _original_from_func_graph = original

            def from_func_graph(name: Any, graph: Any, *args: Any, **kwargs: Any) -> Any:
                listener = _function_listener
                if listener is not None:
                    try:
                        listener(name.decode() if isinstance(name, bytes) else str(name),
                                 graph)
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


# -- small private attributes ---------------------------------------------------------

def can_add_control_input() -> bool:
    """Whether ``Operation._add_control_input`` exists (an op made to wait afterwards)."""
    from tensorflow.python.framework import ops

    present = hasattr(ops.Operation, "_add_control_input")
    if not present:
        debug_once("add_control_input", "tfdbg-tui: Operation._add_control_input not found; "
                   "TF1 placeholders are not traced")
    return present


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
REMOTE_DATASET_FUNCTIONS = frozenset({"_remote_init_func", "_remote_next_func",
                                      "_remote_finalize_func"})


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
        debug_once("default_execution_mode", "tfdbg-tui: context.default_execution_mode "
                   "not found; a TF1 program's while bodies may be taken for TF2 graphs")
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
    if not _internals_present("capture_source", _missing_capture_helper,
                              "the placeholders of the dumper's own captures are recorded"):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == CAPTURE_HELPER and code.co_filename.endswith(CAPTURE_HELPER_FILE):
            return frame.f_locals.get(CAPTURE_SOURCE_LOCAL)
        frame = frame.f_back
    return None


def _missing_capture_helper() -> str | None:
    try:
        module = __import__(CAPTURE_MODULE, fromlist=["_"])
    except ImportError:
        return CAPTURE_MODULE
    helper = getattr(getattr(module, CAPTURE_CLASS, None), CAPTURE_HELPER, None)
    code = getattr(helper, "__code__", None)
    if (code is None or CAPTURE_SOURCE_LOCAL not in code.co_varnames
            or not code.co_filename.endswith(CAPTURE_HELPER_FILE)):
        return f"{CAPTURE_CLASS}.{CAPTURE_HELPER} (its {CAPTURE_SOURCE_LOCAL} argument)"
    return None


def tensor_id(tensor: Any) -> int:
    """An eager tensor's id (``EagerTensor._id``), -1 when TensorFlow has none."""
    ident = getattr(tensor, "_id", None)
    if ident is None:
        debug_once("tensor_id", "tfdbg-tui: EagerTensor._id not found; tensor ids are -1")
        return -1
    return ident


def autograph_source_mappers(thread_ident: int) -> Any:
    """TensorFlow's AutoGraph source-mapper stack of a thread, or None."""
    tf_stack = sys.modules.get("tensorflow.python.util.tf_stack")
    if tf_stack is None:
        return None
    stacks = getattr(tf_stack, "_source_mapper_stacks", None)
    if stacks is None:
        debug_once("source_mapper", "tfdbg-tui: tf_stack._source_mapper_stacks not found; "
                   "AutoGraph frames are not mapped back to the user's lines")
        return None
    return stacks.get(thread_ident)


# -- captures added after a graph's inputs were laid out ----------------------------------

def keep_deferred_captures_last(graph: Any) -> None:
    """Move a FuncGraph's call-time captures back to the end of its inputs.

    ``tf.function`` lays a graph's inputs out as its arguments, its by-value captures,
    then its call-time (deferred) captures, and calls it in that order. A capture
    made after that layout (our trace queue's handle, captured when the last segment's
    enqueue is built) is appended after the call-time captures: a function that has
    any (MultiWorkerMirroredStrategy's collective keys) would be called with its
    inputs out of order.
    """
    deferred = getattr(graph, "deferred_internal_captures", None)
    if not deferred:
        return
    from tensorflow.python.util import nest

    late = {id(t) for t in nest.flatten(deferred, expand_composites=True)}
    inputs = list(graph.inputs)
    reordered = [t for t in inputs if id(t) not in late] + [t for t in inputs if id(t) in late]
    if [id(t) for t in reordered] != [id(t) for t in inputs]:
        graph.inputs = reordered


def raw_eager_op(op_type: str, attrs: tuple[Any, ...], fallback: Callable[..., Any]
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
        debug_once("raw_eager_op", "tfdbg-tui: TFE_Py_Execute not found; the call counter "
                   "runs through the op wrapper")
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
        debug_once("host_int64_view", "tfdbg-tui: no DLPack view of a host tensor (%s); the "
                   "call counter advances by an eager op", exc)
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
        debug_once("executor_is_async", "tfdbg-tui: TFE_ExecutorIsAsync not found; "
                   "Context.is_async asks instead")
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
        debug_once("host_view", "tfdbg-tui: EagerTensor._numpy not found; drained values "
                   "are copied")
        return tensor.numpy()
    array = view()
    if isinstance(array, np.ndarray):
        array.flags.writeable = False  # the tensor's own memory
    return array


def copy_op(op: Any, inputs: list[Any]) -> Any | None:
    """A new op of ``op``'s type and attributes on ``inputs``, in the default graph (a
    FuncGraph captures outer inputs); None when ``Graph._create_op_internal`` is missing."""
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    create = getattr(graph, "_create_op_internal", None)
    if create is None:
        debug_once("copy_op", "tfdbg-tui: Graph._create_op_internal not found; covered "
                   "tensors are read by the exact-rows branch itself")
        return None
    attrs = {key: value for key, value in op.node_def.attr.items()
             if not key.startswith("_")}
    return create(op.type, list(inputs), dtypes=[t.dtype for t in op.outputs],
                  attrs=attrs, name="tfdbg_tui_recomputed")


def cond_op(output: Any) -> Any | None:
    """The ``If`` (or ``StatelessIf``) op behind a ``cond``'s ``output``, or None."""
    op = output.op
    while op.type not in ("If", "StatelessIf") and op.inputs:
        op = op.inputs[0].op
    return op if op.type in ("If", "StatelessIf") else None


def keep_functional_if(op: Any | None) -> None:
    """Keep a ``cond``'s ``If`` op (`cond_op`; None: not found) a functional op, run as
    one call of the branch it takes, instead of TensorFlow lowering it into ``Switch``
    and ``Merge`` ops, whose untaken branch is visited op by op (as dead) every run."""
    from tensorflow.core.framework import attr_value_pb2

    set_attr = getattr(op, "_set_attr", None)
    if op is None or set_attr is None:
        debug_once("keep_functional_if", "tfdbg-tui: cannot keep a summary cond "
                   "functional; TensorFlow lowers it")
        return
    set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=False))


# Ops that take a variable's handle without writing the variable.
_VARIABLE_READERS = frozenset({
    "ReadVariableOp", "VariableShape", "VarIsInitializedOp", "ResourceGather",
    "ResourceGatherNd",
})
# Ops whose output 0 shares input 0's buffer.
_BUFFER_ALIASES = frozenset({
    "Identity", "StopGradient", "Reshape", "Squeeze", "ExpandDims", "Bitcast",
})


def defer_variable_writes(holder: Any, held: list[Any]) -> int:
    """Make the ops that write a variable whose value ``holder`` holds wait for it.

    A ``ReadVariableOp`` output shares the variable's buffer (as do its identities and
    reshapes). While an op of ours still holds it (``held``: tensors ``holder``
    consumes), an op that updates the variable in place (``AssignSubVariableOp``, an
    optimizer's ``ResourceApply*``) finds the buffer shared and copies the whole
    variable first: a copy of every weight, every step. Writes ``holder`` depends on
    are left as they are (waiting would close a cycle).

    Returns:
        How many ops were made to wait.
    """
    handles = {}
    for tensor in held:
        while tensor.op.type in _BUFFER_ALIASES and tensor.op.inputs:
            tensor = tensor.op.inputs[0]
        if tensor.op.type == "ReadVariableOp":
            handle = tensor.op.inputs[0]
            handles[(handle.op.name, handle.value_index)] = handle
    if not handles:
        return 0
    from tensorflow.python.framework import ops

    if not hasattr(ops.Operation, "_add_control_input"):
        debug_once("defer_variable_writes", "tfdbg-tui: Operation._add_control_input not "
                   "found; variables a summary batch reads are copied when written")
        return 0
    writers = []
    for handle in handles.values():
        for op in handle.consumers():
            if (op is not holder and op.type not in _VARIABLE_READERS
                    and op.type not in NESTED_GRAPH_OPS and op not in writers):
                writers.append(op)
    if not writers:
        return 0
    before = _ancestors(holder)
    deferred = 0
    for op in writers:
        if op not in before and holder not in op.control_inputs:
            op._add_control_input(holder)  # pylint: disable=protected-access
            deferred += 1
    return deferred


def _ancestors(op: Any) -> set[Any]:
    """Every op ``op`` waits for, through data and control inputs."""
    seen: set[Any] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen
