"""The TensorFlow internals `instrument` relies on beyond public APIs, each fail-safe:
the table of them, each with its fallback, and `debug_once`, how a missing one is
said.

Every dependency on a private name (a module function, a private attribute, a stack
frame's function name) is checked before use. When TensorFlow no longer has it, the
instrumentation falls back to a slower or less precise route that still records
correct traces, and says so once in a debug-level log message (logger
``instrument.tf_internals``, `debug_once`); it never breaks the user's program and
never silently drops traces. This package holds every such dependency, in five
modules by what the internal is for; the tables below are the whole list. The entry
points alone have no fallback: they are how `instrument` enters TensorFlow at all (as
TensorFlow's own dumper does).

Outside this package, `instrument` imports from ``tensorflow.python`` only the modules
of `STOCK_MODULES`: those behind TensorFlow's public API (``tf.*``, and ``tf.raw_ops``
for the generated ``gen_*_ops``), taken directly to build ops without the public API's
dispatch. `tests/test_tf_internals_home.py` holds both rules: no private attribute of
TensorFlow and no other ``tensorflow.python`` module anywhere else.

`entry_points`: where `instrument` enters TensorFlow.

| internal | used for | when missing |
| --- | --- | --- |
| ``op_callbacks.add_op_callback``, ``op_callbacks.remove_op_callback`` | every eager op and every op added to a graph, in every thread (the dump's callback, the watch tier's) | nothing can be recorded: enabling fails with TensorFlow's ImportError |
| ``transform.CONCRETE_FUNCTION_CALLBACKS``, ``transform.FUNC_GRAPH_TRANSFORMS`` | a concrete function made; a graph fully traced, where its last segment's traces are enqueued (instrument/tracing/graph_batches.py) | enabling fails with TensorFlow's error |
| ``session.BaseSession.run`` (the base of ``tf.compat.v1.Session``) | each TF1 ``Session.run`` recorded as an execution (instrument/tracing/session_runs.py) | enabling fails with TensorFlow's error |

`graph_frames`: what TensorFlow is building now, told from its stack frames, its
names and its per-thread state.

| internal | used for | when missing |
| --- | --- | --- |
| frame ``_create_concrete_function`` in ``tracing_compilation.py`` (its ``func_graph`` local, its call of ``apply_func_graph_transforms``) | knowing a graph is traced by ``tf.function``, whose end the transform hook reports: per-segment batched enqueues | one enqueue per traced tensor |
| ``Graph._nodes_by_id``, ``Operation._id``, ``Operation._add_control_input`` | cutting a graph into segments at nested ops | one enqueue per traced tensor |
| frame ``func_graph_from_py_func`` in ``func_graph.py`` (its ``func_graph`` local) called from ``while_v2.py`` or ``cond_v2.py``; ``control_flow_util_v2.create_new_tf_function`` calling ``apply_func_graph_transforms``; the class name ``WhileCondFuncGraph`` | knowing a graph is a while loop's body or condition or a cond branch, which ends with the transform hook: batched enqueues once a run (an iteration) | one enqueue per traced tensor in those graphs |
| ``atomic_function.from_func_graph`` | the graphs of ``__forward_*``/``__backward_*`` functions (eager calls under a ``GradientTape``) | those executions' ``graph`` is nil |
| ``tf_stack._source_mapper_stacks`` | mapping AutoGraph-generated frames to the user's lines | frames stay in the generated code |
| tf.data's name for a transformation's function graph, ``Dataset_<transformation>_<function>`` (``structured_function.py``) | not tracing a tf.data function's inputs (dataset elements: Keras' ``fit`` on arrays passes the whole arrays to its map at every step) | they are traced (exact; a kernel over the whole element each call) |
| tf.data's names ``_remote_init_func``, ``_remote_next_func``, ``_remote_finalize_func`` (``multi_device_iterator_ops.py``, ``prefetching_ops.py``) | recording, not tracing, the functions a multi-device iterator (``MirroredStrategy``'s input) or ``copy_to_device`` runs on the destination device: tf.data runs them on that device alone, where the trace queue and the call counter cannot be reached; their values are the source device's, traced there | such an iterator's call fails with "Could not find variable tfdbg_tui_calls_..." (the conformance suite's MirroredStrategy scenarios catch it) |
| frame ``FunctionCaptures._create_placeholder_helper`` in ``capture_container.py`` (its ``tensor`` local) | telling the Placeholder that captures one of the dumper's own resources (the trace queue, the call counter, XLA trace blocks) into a function graph, so that it is not recorded as the program's op (instrument/tracing/own_resources.py) | those placeholders are recorded (named by number), as the graph's inputs |
| ``Function._jit_compile`` | knowing a watched custom loop's step function compiles with XLA, to replay its hit step with and without XLA | it is replayed without XLA only |
| frame ``_create_concrete_function``'s ``tracing_options.python_function`` (a wrapper that enters the function's XLA context, its ``__wrapped__`` the program's function) and ``placeholder_bound_args`` | the function a watched custom loop's step traces, and its arguments: what the replay calls, with or without XLA as the replay says (`traced_call`) | the step is not replayed (a notice says the step function was not found) |
| ``FuncGraph._watched_variables`` | naming the variable a function graph's capture stands for (``var`` of the op records that read or write it), so the trends name a custom loop's variables and an optimizer's slots as the program does; the variables a watched custom loop's step writes besides its optimizer's (BatchNormalization's moving statistics, a ``tf.random.Generator``'s state), kept as the last good step left them | those ops carry no ``var``: the reader names the variable after the op that reads it; a watched custom loop keeps only its optimizer's state |
| ``Operation._is_stateful`` | the ops of a traced graph kept alive whatever uses them, so that a value nothing uses is not traced (`graph_batches.dead_ops`) | every op is kept alive: values nothing uses are traced |
| ``control_flow_util.GraphOrParentsInXlaContext`` | telling a graph compiled by XLA, or nested in one: its traces go through resource variables (instrument/tracing/xla_traces.py) | none: TensorFlow's ImportError (the module is as old as TensorFlow 2) |
| ``context.default_execution_mode`` | telling a TF1 program's graphs (eager execution disabled after the context started) from a TF2 program's | ``executing_eagerly_outside_functions`` alone, which says True inside a while body of such a TF1 graph |

`eager_runtime`: eager tensors and ops by faster routes than the public API's.

| internal | used for | when missing |
| --- | --- | --- |
| ``EagerTensor._id`` | eager tensor ids (``in``, ``out``) | ids are -1 |
| eager ``ReadVariableOp`` returning the variable's own buffer; ``tf.experimental.dlpack.to_dlpack`` | advancing the call counter by a store into the variable's host memory (0.04 us) instead of an eager op (instrument/tracing/call_counter.py; checked when the counter is made) | the eager op below |
| ``pywrap_tfe.TFE_ContextGetExecutorForThread``, ``TFE_ExecutorIsAsync``, ``TFE_DeleteExecutor`` | asking, after each eager function call, whether the thread's executor is asynchronous (0.4 us), without ``Context.is_async``'s ``Executor`` object, whose finalizer waits for the executor (1 us) | ``Context.is_async`` |
| ``pywrap_tfe.TFE_Py_Execute``, ``Context._handle`` | the call counter's eager increment (a GPU's counter, an asynchronous executor), without the Python op dispatch (4-27 us, where the generated op wrapper costs ~100 us) | the generated op wrapper |
| ``context.eager_mode`` | draining the trace queue eagerly also where a TF1 program disabled eager execution (the queue is an eager resource) | none: TensorFlow's ImportError (as old as TensorFlow 2) |
| ``EagerTensor._numpy`` | reading a drained FULL_TENSOR batch (megabytes a step) in place, where ``numpy()`` copies it | ``numpy()`` |
| ``resource_variable_ops.ResourceVariable``'s constructor, which skips the variable creators a ``tf.distribute`` strategy installs | the watch tier's own variables (its flag, counters, ring and kept batches) in one copy under a strategy's scope, written in the cross-replica context or one per replica | ``tf.Variable``: mirrored under a strategy (a watched ``MirroredStrategy`` step then fails to trace, and its updates run unwatched) |

`graph_edits` and `held_writes`: changes to a graph that the public API cannot make.

| internal | used for | when missing |
| --- | --- | --- |
| ``Operation._add_control_input`` (TF1 route) | a TF1 placeholder's consumers wait for its trace | TF1 placeholders are not traced (a ``tf1_untraced`` notice says so) |
| ``FuncGraph.deferred_internal_captures`` | keeping a traced graph's call-time captures (MultiWorkerMirroredStrategy's collective keys) the last inputs after the trace queue is captured late | a function with call-time captures fails when called (never seen: the attribute is as old as call-time captures) |
| ``Graph._create_op_internal`` | recomputing, inside the exact-rows branch of a summary batch, a tensor whose check another covers, from its op's inputs (instrument/summaries/check_elision.py) | the branch reads the tensor itself (it stays exact; fusions around that tensor are lost) |
| ``Operation._add_control_input`` (variable writes) | the ops that write a variable wait for the summary batch's ``If`` (or FULL_TENSOR's values concat) that holds the value read from it: the variable is updated in place, not copied first | a write that runs first copies the variable (the traces stay exact) |
| ``gen_resource_variable_ops.read_variable_op``, ``assign_variable_op``, ``assign_add_variable_op``, ``assign_sub_variable_op``, ``resource_scatter_*``, ``resource_gather*``, replaced while a watch is on (called through the module by ``resource_variable_ops``) | a watched optimizer's writes held while its update is traced and made after the check of its changes (held_writes.py): a NaN the optimizer makes is not written | the update is written as it comes and checked after (a debug notice says so): such a NaN is found at the next step, the state before it lost |
| ``Operation._set_attr``, attribute ``_lower_using_switch_merge`` | a segment's summary ``cond`` kept a functional ``If``: its untaken branch (a kernel for every tensor) is not visited as dead ops each step | the ``cond`` is lowered to ``Switch``/``Merge`` as TensorFlow does by default |
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# The `tensorflow.python` modules the rest of `instrument` may import (module docstring):
# TensorFlow's public API is built of them (`tf.identity` is `array_ops.identity`,
# `tf.raw_ops` the generated `gen_*_ops`); every other one is imported here only.
STOCK_MODULES = frozenset(
    {
        "tensorflow.python.framework.config",
        "tensorflow.python.framework.constant_op",
        "tensorflow.python.framework.dtypes",
        "tensorflow.python.framework.ops",
        "tensorflow.python.framework.tensor_util",
        "tensorflow.python.ops.array_ops",
        "tensorflow.python.ops.array_ops_stack",
        "tensorflow.python.ops.cond",
        "tensorflow.python.ops.math_ops",
        "tensorflow.python.ops.script_ops",
    }
)
# Generated op wrappers (`tensorflow.python.ops.gen_*_ops`): `tf.raw_ops`.
STOCK_GENERATED_PREFIX = "tensorflow.python.ops.gen_"

_logged: set[str] = set()
_logged_lock = threading.Lock()


def debug_once(key: str, message: str, *args: Any) -> None:
    """Log ``message`` at debug level the first time ``key`` is seen in this process."""
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.debug(message, *args)


# Per group of internals (`internals_present`): whether all were found.
_internals_found: dict[str, bool] = {}


def internals_present(key: str, find_missing: Callable[[], str | None], consequence: str) -> bool:
    """Whether ``find_missing`` found nothing missing; checked once per process, and
    what is missing logged once at debug level, followed by ``consequence``."""
    found = _internals_found.get(key)
    if found is None:
        missing = find_missing()
        if missing:
            debug_once(key, "tfdbg-tui: %s not found in this TensorFlow; " + consequence, missing)
        found = _internals_found[key] = not missing
    return found
