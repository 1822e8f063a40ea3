"""Where a source op's non-finite values came from: the tf.data batch (and element,
column in FULL_TENSOR), the `py_function`/`numpy_function`, the variable's initial,
assigned or restored value.

A root cause at an op that brings values in (`SOURCE_OPS`)
says only "no op in the dump made these values". This module follows them one step
further, from what the dump recorded around that op:

- ``dataset``: the op that delivered a tf.data element (an eager ``IteratorGetNext``
  in ``for x, y in dataset:``, or one inside a Keras train function), or an op of a
  dataset function that only copied values it was handed unrecorded (Keras' batch of
  ``model.fit``'s arrays, gathered in ``grab_batch``): which batch
  (counted from 0, among the deliveries of the same iterator), and, when the run kept
  values (FULL_TENSOR), the row and column of the first non-finite value and the
  element of the dataset it was (the rows of the batches before it added up).
- ``py_function`` / ``numpy_function`` / ``generator``: a ``tf.py_function``,
  ``tf.numpy_function`` or ``Dataset.from_generator`` handed the values over: the
  Python function, by the name the user passed (read from the expression).
- ``variable_initial`` / ``variable_restored`` / ``variable_assigned``: a variable
  read in a tf.function held them. The function call's inputs give the variable's
  handle (a captured variable is an input of the call, in the order of the graph's
  placeholders); the eager writes of that handle before the call say how it got its
  value: at its creation (its only write) or by a later assignment (``assign``, Keras'
  ``load_weights``), each at the user's line. A checkpoint restore that read the
  values (``RestoreV2``) is itself the root cause, as its output is recorded. Each
  names the variable, a restore its checkpoint key, and with the values (FULL_TENSOR)
  the rows that hold them (`reader.analysis.diagnosis.variable_names`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from reader.analysis.diagnosis.expressions import expression_of
from reader.analysis.diagnosis.variable_names import (
    nonfinite_rows,
    restored_variable,
    variable_name,
)
from reader.analysis.diagnosis.wording import nonfinite_text
from reader.analysis.hunt.model_place import RESTORE_OPS
from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS, is_dataset_graph
from reader.errors import DumpError
from reader.model import Execution, Frame, Op, RootCause

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

SOURCE_KINDS = (
    "dataset",
    "py_function",
    "numpy_function",
    "generator",
    "variable_initial",
    "variable_restored",
    "variable_assigned",
)
# Ops that bring values into the computation rather than compute them: what they
# output non-finite came in from outside. Op type -> what it is, in the user's terms.
SOURCE_OPS = {
    "ReadVariableOp": "the variable",
    "ResourceGather": "the variable",
    "VariableV2": "the variable",
    "Variable": "the variable",
    "Placeholder": "the function argument",
    "PlaceholderWithDefault": "the function argument",
    "_Arg": "the function argument",
    "IteratorGetNext": "the input data (tf.data)",
    "IteratorGetNextSync": "the input data",
    "OptionalGetValue": "the input data (tf.data)",
    "Const": "the constant",
    "RestoreV2": "the restored checkpoint",
    "Restore": "the restored checkpoint",
    "PyFunc": "the Python function (tf.numpy_function, or a from_generator generator)",
    "EagerPyFunc": "the Python function (tf.py_function)",
}
# Earlier executions looked at, at most, to count batches or find a variable's writes.
MAX_EXECUTIONS_SCANNED = 100_000
# The sources whose values came in outside any step, and the phase that names it.
SOURCE_PHASES = {
    "variable_initial": "init",
    "variable_assigned": "restore",
    "variable_restored": "restore",
}
# Ops that copy or select values and cannot make a NaN or an infinity.
DATA_COPY_OPS = frozenset(
    {
        "GatherV2",
        "Gather",
        "ResourceGather",
        "StridedSlice",
        "Slice",
        "Identity",
        "Reshape",
        "Squeeze",
        "ExpandDims",
        "ConcatV2",
    }
)
# Ops that make no NaN from finite inputs (an overflow makes an infinity, never a NaN):
# a NaN out of one whose recorded inputs are finite came in through an input the dump
# does not have.
NAN_FREE_OPS = DATA_COPY_OPS | frozenset(
    {
        "Mul",
        "AddV2",
        "Add",
        "Sub",
        "BiasAdd",
        "Neg",
        "Abs",
        "Square",
        "Cast",
        "Maximum",
        "Minimum",
        "Relu",
        "Relu6",
        "Elu",
        "Tanh",
        "Sigmoid",
        "Exp",
        "Softplus",
        "Round",
        "Floor",
        "Ceil",
        "Sign",
        "ClipByValue",
        "SelectV2",
        "Select",
        "Pack",
        "Tile",
    }
)
_ARGUMENTS = frozenset({"Placeholder", "_Arg"})
_VARIABLE_READS = frozenset({"ReadVariableOp", "ResourceGather"})
_VARIABLE_WRITES = frozenset({"AssignVariableOp"})
_PYTHON_FUNCTION_APIS = frozenset(
    {"py_function", "numpy_function", "py_func", "eager_py_func", "from_generator"}
)
_PYTHON_FUNCTIONS = {
    "EagerPyFunc": ("py_function", "tf.py_function"),
    "PyFunc": ("numpy_function", "tf.numpy_function"),
    "PyFuncStateless": ("numpy_function", "tf.numpy_function"),
}


@dataclass(frozen=True, slots=True)
class InputSource:
    """Where the non-finite values a source op brought in came from.

    Attributes:
        kind: One of `SOURCE_KINDS`.
        text: Where from, in the user's terms ("batch 1 of the tf.data pipeline ...").
        suggestion: What to check or change there.
        evidence: The records the answer rests on, one line each.
        batch: ``dataset``: the batch, counted from 0; None when a circular buffer
            dropped deliveries before it.
        element: ``dataset``, FULL_TENSOR: the first non-finite element of the dataset.
        position: FULL_TENSOR: the index of the first non-finite value: in the batch
            (``dataset``: row, column...) or in the variable (``variable_*``).
        function: ``py_function`` and the like: the Python function's name.
        frame: The user's line where the value came in (a variable's creation,
            restore or assignment).
        variable: ``variable_*``: the variable's name, when the dump says (format 2.8).
        checkpoint_key: ``variable_restored``: the checkpoint key it was read from.
        rows: ``variable_*``, FULL_TENSOR: the rows (first index) holding non-finite
            values (the elements, for a vector).
    """

    kind: str
    text: str
    suggestion: str
    evidence: tuple[str, ...] = ()
    batch: int | None = None
    element: int | None = None
    position: tuple[int, ...] | None = None
    function: str | None = None
    frame: Frame | None = None
    variable: str | None = None
    checkpoint_key: str | None = None
    rows: tuple[int, ...] | None = None

    @property
    def phase(self) -> str | None:
        """The phase the values came in at when it is not a step's (`SOURCE_PHASES`):
        ``init`` (a variable's initial value) or ``restore`` (a checkpoint, an
        assignment such as ``set_weights``); None otherwise."""
        return SOURCE_PHASES.get(self.kind)

    def as_dict(self) -> dict[str, object]:
        """The JSON form (`report --json`, ``diagnosis.source``)."""
        frame = None if self.frame is None else {"file": self.frame.path, "line": self.frame.line}
        return {
            "kind": self.kind,
            "phase": self.phase,
            "batch": self.batch,
            "element": self.element,
            "position": None if self.position is None else list(self.position),
            "function": self.function,
            "frame": frame,
            "variable": self.variable,
            "checkpoint_key": self.checkpoint_key,
            "rows": None if self.rows is None else list(self.rows),
        }


def input_source(reader: AnalysedRun, cause: RootCause) -> InputSource | None:
    """Where the values a root cause's op brought in came from; None when the op is
    not one that brings values in, or the dump does not say. A variable's source says
    which rows hold them and where its first non-finite value is when the dump holds
    the value (FULL_TENSOR)."""
    source = _input_source(reader, cause)
    if source is None or source.phase is None:
        return source
    alert = cause.alert
    try:
        value = (
            reader.trace_value(alert.index)
            if alert.kind == "graph"
            else reader.execution_value(alert.index, alert.slot)
        )
    except DumpError:
        value = None
    bad = _nonfinite_positions(value)
    rows = nonfinite_rows(value)
    if bad is None or not bad.shape[0] or rows is None:
        return source
    position = tuple(int(i) for i in bad[0])
    return replace(
        source,
        text=f"{source.text}; {rows.text(source.variable)}; its first non-finite value is "
        f"at index {list(position)}",
        position=position,
        rows=rows.rows,
    )


def _input_source(reader: AnalysedRun, cause: RootCause) -> InputSource | None:
    try:
        if cause.op is None and cause.execution is not None:
            if cause.execution.op_type in DATASET_DELIVERY_OPS:
                return _eager_batch(reader, cause.execution, cause.alert.slot)
            if cause.execution.op_type in _VARIABLE_READS and cause.execution.input_ids:
                return _variable(reader, cause.execution.input_ids[0], cause.execution.index)
            if cause.execution.op_type in RESTORE_OPS:
                return _restored(reader, cause.execution, cause.frame, cause.alert.slot)
            return None
        op = cause.op
        if op is None or cause.trace is None:
            return None
        if op.op_type in RESTORE_OPS:
            return _restored(reader, op, cause.frame, cause.alert.slot)
        if op.op_type in DATASET_DELIVERY_OPS:
            return _graph_batch(reader, op, cause.trace.index, cause.alert.slot)
        if _takes_dataset_input(reader, cause):
            return _delivered_batch(reader, cause)
        if op.op_type in _PYTHON_FUNCTIONS:
            return _python_function(reader, cause)
        if op.op_type in _VARIABLE_READS:
            handle = _captured_handle(reader, cause)
            return None if handle is None else _variable(reader, handle, cause.trace.step)
    except DumpError:
        return None  # a record it needs left the disk (circular buffer) or is damaged
    return None


# -- tf.data ---------------------------------------------------------------------------


def _eager_batch(reader: AnalysedRun, execution: Execution, slot: int) -> InputSource:
    earlier = [
        e
        for e in _earlier_executions(reader, execution.op_type, execution.index)
        if e.input_ids[:1] == execution.input_ids[:1]
    ]
    value = reader.execution_value(execution.index, slot)
    rows = (
        [_rows(reader.execution_value(e.index, slot)) for e in earlier] if value is not None else []
    )
    return _batch_source(
        len(earlier),
        value,
        rows,
        slot,
        f"{execution.op_type} (execution {execution.index})",
        _kept_from_start(reader.kept_executions(), execution.index)
        and len(earlier) < MAX_EXECUTIONS_SCANNED,
    )


def _graph_batch(reader: AnalysedRun, op: Op, trace: int, slot: int) -> InputSource:
    traces = reader.traces_of(op.id, slot)
    before = traces[traces < trace]
    value = reader.trace_value(trace)
    rows = (
        [_rows(reader.trace_value(int(i))) for i in before]
        if value is not None and before.size <= MAX_EXECUTIONS_SCANNED
        else []
    )
    return _batch_source(
        int(before.size),
        value,
        rows,
        slot,
        f"{op.op_type} '{op.name}' (trace {trace})",
        _kept_from_start(reader.kept_traces(), trace),
    )


def _kept_from_start(runs: list[tuple[int, int]], index: int) -> bool:
    """Whether every record before ``index`` is on disk (``runs``: the kept ``(begin,
    end)`` ranges): else a circular buffer dropped deliveries, and counting the kept
    ones does not give the batch."""
    return bool(runs) and runs[0][0] == 0 and runs[0][1] >= index


def _delivered_batch(reader: AnalysedRun, cause: RootCause) -> InputSource | None:
    """The batch that carried a dataset function's non-finite values to the consumer:
    its first delivery alert (a dataset function's own traces come in the order its
    parallel calls finished, not in the order of the elements)."""
    for alert in reader.alerts().alerts:
        if alert.op_type not in DATASET_DELIVERY_OPS:
            continue
        if alert.kind == "eager":
            return _eager_batch(reader, reader.execution(alert.index), alert.slot)
        trace = reader.trace(alert.index)
        if trace.op_id is not None:
            return _graph_batch(reader, reader.op(trace.op_id), alert.index, alert.slot)
    return None


def _takes_dataset_input(reader: AnalysedRun, cause: RootCause) -> bool:
    """Whether a root cause is an argument of a dataset function, or an op of one whose
    values came in through inputs the dump does not have (a dataset function's
    arguments are its elements, recorded but not traced): an op that only copies
    values (Keras' ``grab_batch`` gathers a batch's rows of ``model.fit``'s arrays),
    or one that makes no NaN from finite inputs (``f * 2.0`` in a ``map``) whose NaN
    cannot have come from its recorded, finite inputs. Then the data the pipeline was
    built from held the non-finite values."""
    op = cause.op
    if op is None or not is_dataset_graph(reader, op.graph_id):
        return False
    if op.op_type in _ARGUMENTS:
        return True
    if not any(s is None for _, s in cause.inputs):
        return False
    if op.op_type in DATA_COPY_OPS:
        return True
    output = cause.trace.summary if cause.trace is not None else None
    recorded_finite = all(s is None or not s.is_alert for _, s in cause.inputs)
    return (
        op.op_type in NAN_FREE_OPS and recorded_finite and output is not None and bool(output.nan)
    )


def _rows(value: np.ndarray | None) -> int | None:
    return None if value is None or value.ndim == 0 else int(value.shape[0])


def _batch_source(
    batch: int,
    value: np.ndarray | None,
    rows: list[int | None],
    slot: int,
    record: str,
    counted: bool,
) -> InputSource:
    """``batch`` deliveries of the same iterator came before; ``counted``: all of them
    are on disk (else the batch is not known, only that it came after those)."""
    component = f", component {slot} of the element" if slot else ""
    if counted:
        text = f"the tf.data pipeline delivered them in batch {batch} (counted from 0{component})"
        evidence = [f"{record}: batch {batch}, {batch} earlier deliveries of the same iterator"]
    else:
        kept = f"after {batch:,} kept deliveries" if batch else "kept without those before it"
        text = (
            f"the tf.data pipeline delivered them in a batch {kept}{component} (the "
            "circular buffer did not keep the earlier ones: its number is not known)"
        )
        evidence = [
            f"{record}: {batch:,} earlier deliveries of the same iterator on "
            "disk; earlier ones not kept"
        ]
    position = element = None
    bad = _nonfinite_positions(value)
    if bad is not None and bad.size:
        position = tuple(int(i) for i in bad[0])
        text += f", first at {_position_text(position)} of the batch"
        if counted and len(rows) == batch and all(r is not None for r in rows):
            element = sum(r for r in rows if r is not None) + position[0]
            text += f": element {element} of the dataset"
        evidence.append(
            f"value of the batch: {int(bad.shape[0])} non-finite, the first "
            f"at index {list(position)}"
        )
    return InputSource(
        "dataset",
        text,
        "look at that element in the source data (filter or impute NaN rows, or "
        "dataset.map(...) with tf.debugging.check_numerics to stop at it)",
        tuple(evidence),
        batch=batch if counted else None,
        element=element,
        position=position,
    )


def _nonfinite_positions(value: np.ndarray | None) -> np.ndarray | None:
    """The indices of a batch's non-finite values (rows of ``np.argwhere``); None for
    no value, a scalar, or a dtype that cannot hold NaN."""
    if value is None or value.ndim == 0 or not value.size:
        return None
    try:
        return np.argwhere(~np.isfinite(value.astype(np.float64, copy=False)))
    except (TypeError, ValueError):
        return None  # strings, or another dtype without a float view


def _position_text(position: tuple[int, ...]) -> str:
    if len(position) == 1:
        return f"row {position[0]}"
    if len(position) == 2:
        return f"row {position[0]}, column {position[1]}"
    return f"index {list(position)}"


def _earlier_executions(reader: AnalysedRun, op_type: str, before: int) -> list[Execution]:
    """The executions of ``op_type`` below index ``before`` (the latest
    `MAX_EXECUTIONS_SCANNED` of them), in order."""
    begin = max(reader.first_execution, 0)
    if before <= begin:
        return []
    codes, names = reader.execution_op_codes(begin, before)
    wanted = [code for code, name in enumerate(names) if name == op_type]
    rows = np.flatnonzero(np.isin(codes, wanted))[-MAX_EXECUTIONS_SCANNED:]
    return [reader.execution(begin + int(r)) for r in rows]


# -- Python functions ------------------------------------------------------------------


def _python_function(reader: AnalysedRun, cause: RootCause) -> InputSource:
    assert cause.op is not None
    kind, api = _PYTHON_FUNCTIONS[cause.op.op_type]
    name = _called_function(expression_of(reader, cause.frame))
    if name is None and cause.line_text:  # no column span (TensorFlow's dumps)
        name = _called_function(cause.line_text.strip())
    output = nonfinite_text(cause.trace.summary if cause.trace else None)
    if is_dataset_graph(reader, cause.op.graph_id) and "from_generator" in (
        reader.graph(cause.op.graph_id).name or ""
    ):
        kind, api = "generator", "Dataset.from_generator"
    who = f"the Python function `{name}`" if name else "a Python function"
    return InputSource(
        kind,
        f"{who}, called through {api}, returned {output}",
        f"look at {'`' + name + '`' if name else 'the Python function'}: TensorFlow only "
        f"passed on what it returned (np.isfinite on its result finds the rows)",
        (f"{cause.op.op_type} '{cause.op.name}': the output of {api}",),
        function=name,
    )


def _called_function(code: str | None) -> str | None:
    """The Python function passed to ``tf.py_function(load, ...)`` (or
    ``numpy_function``, ``from_generator``) in an expression or a line of code."""
    if not code:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        if callee not in _PYTHON_FUNCTION_APIS:
            continue
        target = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg in ("func", "generator")), None)
        )
        return ast.unparse(target) if target is not None else None
    return None


# -- variables -------------------------------------------------------------------------


def _captured_handle(reader: AnalysedRun, cause: RootCause) -> int | None:
    """The eager tensor id of the variable a tf.function's ReadVariableOp read: the
    call's input at the position of the graph placeholder that captured it."""
    op, call = cause.op, cause.execution
    if op is None or call is None or call.graph_id != op.graph_id or not op.inputs:
        return None
    resource = op.inputs[0].op_id
    placeholders = [o.id for o in reader.graph_ops(op.graph_id) if o.op_type == "Placeholder"]
    if resource not in placeholders:
        return None
    position = placeholders.index(resource)
    return call.input_ids[position] if position < len(call.input_ids) else None


def _variable(reader: AnalysedRun, handle: int, before: int) -> InputSource | None:
    writes = [
        e
        for e in _earlier_executions(reader, "AssignVariableOp", before)
        if e.input_ids[:1] == (handle,)
    ]
    if not writes:
        return None
    write = writes[-1]
    frame = reader.innermost_user_frame(write.stack_id)
    at = _line_text(reader, frame)
    created = reader.producer_of(handle, before=write.index)
    name = variable_name(reader, handle, before=write.index)
    the_variable = f"the variable `{name}`" if name else "the variable"
    named = (
        (f"VarHandleOp (execution {created[0]}) made the variable `{name}`",)
        if (name and created)
        else ()
    )
    initial = created is not None and len(writes) == 1
    if initial:
        return InputSource(
            "variable_initial",
            f"{the_variable} held them from its creation: its initial value{at}",
            f"check the initial value of {the_variable} (the array or initializer it was "
            "created with)",
            (
                f"AssignVariableOp (execution {write.index}), the only write of the "
                f"variable, right after its creation",
                *named,
            ),
            frame=frame,
            variable=name,
        )
    return InputSource(
        "variable_assigned",
        f"the program assigned them to {the_variable} outside the traced functions{at}",
        f"check the value assigned to {the_variable} there",
        (
            f"AssignVariableOp (execution {write.index}), the last write of the variable "
            f"before it was read",
            *named,
        ),
        frame=frame,
        variable=name,
    )


def _restored(
    reader: AnalysedRun, restore: Execution | Op, frame: Frame | None, slot: int
) -> InputSource:
    """A restore's output ``slot``: an eager one names its checkpoint key and the
    variable it went into (format 2.8); what put the NaN in the checkpoint the dump
    cannot know, so the suggestion says what to check."""
    where = f"execution {restore.index}" if isinstance(restore, Execution) else "in a graph"
    restored = restored_variable(reader, restore, slot) if isinstance(restore, Execution) else None
    key = restored.key if restored is not None else None
    name = restored.variable if restored is not None else None
    variable = f"the variable `{name}`" if name else "a variable"
    from_key = f"checkpoint key `{key}`" if key else "a checkpoint"
    evidence = [f"{restore.op_type} ({where}) read the values from the checkpoint"]
    if key:
        evidence.append(f"{restore.op_type} output {slot}: checkpoint key `{key}`")
    if name and restored is not None:
        evidence.append(f"AssignVariableOp wrote output {slot} into the variable `{name}`")
    lookup = (
        f"np.isfinite(tf.train.load_checkpoint(path).get_tensor({key!r})) shows the rows "
        "that hold them"
        if key
        else "np.isfinite(tf.train.load_checkpoint(path).get_tensor(name)) finds the "
        "variable and the rows that hold them"
    )
    return InputSource(
        "variable_restored",
        f"{variable} was restored from {from_key}, which held them ({restore.op_type}, "
        f"{where}{_line_text(reader, frame)})",
        f"check the checkpoint: {lookup}; then check how it was written (saved after the "
        "weights went non-finite, or edited since) and whether an earlier checkpoint is "
        "finite",
        tuple(evidence),
        frame=frame,
        variable=name,
        checkpoint_key=key,
    )


def _line_text(reader: AnalysedRun, frame: Frame | None) -> str:
    """ ", at `expression` (file.py:12)" for a user frame, else ""."""
    if frame is None:
        return ""
    expression = expression_of(reader, frame)
    where = f"{frame.path.rsplit('/', 1)[-1]}:{frame.line}"
    return f", at `{expression}` ({where})" if expression else f", at {where}"
