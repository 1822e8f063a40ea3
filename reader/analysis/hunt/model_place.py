"""Where in the model a tensor was made: its phase (forward, gradient, optimizer, data),
its Keras layer path, its innermost library frame.

- **phase**: ``forward``, ``gradient``, ``optimizer``, ``data`` or ``other``, from the
  op's name scopes (``gradient_tape/`` and ``gradients/`` are TensorFlow's gradient
  scopes, an optimizer's update runs under its name: ``adam/``), its type (``ReluGrad``,
  ``ResourceApplyAdam``) and its graph (a tf.data function's, a ``__backward_`` one).
- **layer**: the path of the Keras layer whose ``call`` built the op
  (``sequential_1/dense_2``), as our dumper records it (`Op.layer`: Keras 3's
  ``Layer.path``, since format 2.2); a gradient op takes the layer of the forward op it
  differentiates. In TensorFlow's own dumps (and ours before 2.2) it is the op's name
  scope when its creation stack passes through a layer's ``__call__``, which carries
  TensorFlow's ``_1`` suffixes when a scope was entered twice in one graph.
- **library frame**: the innermost frame of library code (Keras, another library)
  below the user's own frame that is not op plumbing (TensorFlow's op wrappers,
  ``keras.ops`` and the backend's op modules): the library function that made the op
  (``keras/src/optimizers/adam.py`` ``update_step``).

Phase and layer are read from names (cheap); the stack is decoded for the layer's
check and the library frame, once per op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reader import format as fmt
from reader.analysis.hunt.root_cause import DATASET_DELIVERY_OPS, is_dataset_graph
from reader.errors import DumpError
from reader.model import Alert, Frame, Op

if TYPE_CHECKING:
    from reader.run.run_protocol import Run

PHASES = ("forward", "gradient", "optimizer", "data", "metric", "restore", "init", "other")
# Ops that read a checkpoint's values into the program: phase ``restore``.
RESTORE_OPS = frozenset({"RestoreV2", "Restore", "RestoreSlice"})
GRADIENT_SCOPES = ("gradient_tape/", "gradients/", "gradients_")
# Name scopes an optimizer's update runs under (Keras 3 uses the optimizer's name,
# TensorFlow 1 and tf_keras their class names), with TensorFlow's "_1" suffixes.
_OPTIMIZER_SCOPE = re.compile(
    r"^(loss_scale_optimizer|adam|adamw|sgd|rmsprop|adagrad|adadelta|adamax|nadam|ftrl|"
    r"lion|lamb|adafactor|muon|gradientdescent|momentum|training)(_\d+)?$",
    re.IGNORECASE,
)
_OPTIMIZER_OP_PREFIXES = (
    "ResourceApply",
    "ApplyAdam",
    "ApplyGradientDescent",
    "ResourceSparseApply",
)
_METRIC_SCOPES = ("compile_metrics", "metrics")
# Scopes of control flow around an op, skipped to find the scope that says its phase:
# Keras' loss scaler applies the optimizer in a cond (``cond/adam/Sub_2``).
_CONTROL_FLOW_SCOPE = re.compile(r"^(cond|while|case|switch_case)(_\d+)?$")
# A frame of Keras' metrics machinery: what runs under it computes a metric (a
# custom metric's ``update_state`` or ``result`` too), not the loss.
_METRIC_FRAME = re.compile(
    r"[\\/]keras[\\/]src[\\/](metrics[\\/]|trainers[\\/]trainer\.py:(compute_metrics|"
    r"get_metrics_result)$)|[\\/]tf_keras[\\/]src[\\/]metrics[\\/]"
)
_OPTIMIZER_FILE = re.compile(r"[\\/]keras[\\/]src[\\/]optimizers[\\/]|[\\/]optimizers?[\\/]")
# A frame in one of these files is the machinery of a layer call.
_LAYER_CALL = re.compile(
    r"([\\/]keras[\\/]src[\\/]layers[\\/]layer\.py|"
    r"[\\/]tf_keras[\\/]src[\\/]engine[\\/]base_layer\.py|"
    r"[\\/]keras[\\/]engine[\\/]base_layer\.py)$"
)
# Library frames that only wrap an op: never "the library function that made it".
_OP_PLUMBING = re.compile(
    r"[\\/](tensorflow|tensorflow_core)[\\/]|[\\/]keras[\\/]src[\\/](ops|utils)[\\/]|"
    r"[\\/]keras[\\/]src[\\/]backend[\\/](?!tensorflow[\\/](trainer|optimizer)\.py)|"
    r"[\\/]keras[\\/]src[\\/]layers[\\/]layer\.py$|[\\/]instrument[\\/]|"
    r"[\\/]python3?\.?\d*[\\/][a-z_]+\.py$|__autograph_generated"
)
# An op's own name scope components: an op type ("MatMul") or TensorFlow's lower-case
# op names ("mul", "truediv_1"); a layer's scope is what stays above them.
_OP_SCOPE = re.compile(
    r"^[A-Z]|^(add|sub|mul|truediv|div|pow|neg|sum|mean|cond|while|"
    r"Placeholder)(_\d+)?$"
)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a tensor was made.

    Attributes:
        phase: One of `PHASES`.
        layer: The Keras layer's name-scope path, or None outside a layer's call.
        library_frame: The library function that made the op, or None when the
            user's own code called the op directly.
        forward: For a gradient op, the forward op it differentiates, when found.
        forward_frame: That forward op's user line (the innermost user frame of its
            creation stack), or None.
    """

    phase: str
    layer: str | None = None
    library_frame: Frame | None = None
    forward: Op | None = None
    forward_frame: Frame | None = None

    def describe(self) -> str:
        """ "gradient of sequential/dense_1, in keras/src/optimizers/adam.py update_step"."""
        text = self.phase
        if self.layer:
            text += f" of {self.layer}" if self.phase == "gradient" else f" in {self.layer}"
        if self.library_frame is not None:
            text += f", made by {library_frame_text(self.library_frame)}"
        return text


def library_frame_text(frame: Frame) -> str:
    """A library frame in a few words: "keras/src/optimizers/adam.py:141 update_step"."""
    return f"{library_frame_location(frame)} {frame.function}"


def library_frame_location(frame: Frame) -> str:
    """A library frame's file, from its package, and line:
    "keras/src/optimizers/adam.py:141"."""
    path = frame.path.replace("\\", "/")
    cut = path.rfind("site-packages/")
    short = path[cut + len("site-packages/") :] if cut >= 0 else path
    return f"{short}:{frame.line}"


def phase_of_name(op_type: str, op_name: str | None) -> str | None:
    """The phase the op's type and name alone say, or None (they say nothing)."""
    name = op_name or ""
    if op_type in DATASET_DELIVERY_OPS:
        return "data"
    if op_type in RESTORE_OPS:
        return "restore"
    if is_gradient_name(op_type, name):
        return "gradient"
    parts = name.split("/")
    while len(parts) > 2 and _CONTROL_FLOW_SCOPE.match(parts[0]):
        parts = parts[1:]
    head = parts[0]
    if (
        op_type.startswith(_OPTIMIZER_OP_PREFIXES)
        or len(parts) > 1
        and _OPTIMIZER_SCOPE.match(head)
    ):
        return "optimizer"
    if head in _METRIC_SCOPES:
        return "metric"
    return None


def is_gradient_name(op_type: str, op_name: str) -> bool:
    """Whether an op belongs to a gradient computation, by its scope or type."""
    return (
        op_type.endswith("Grad")
        or op_type.endswith("GradV2")
        or any(op_name.startswith(s) or f"/{s}" in op_name for s in GRADIENT_SCOPES)
    )


class PlaceFinder:
    """Finds the `Place` of ops and alerts, caching per op (a dump's ops do not change)."""

    def __init__(self, reader: Run) -> None:
        self._reader = reader
        self._ops: dict[int, Place] = {}
        self._graphs: dict[int, list[Op]] = {}

    def of_alert(self, alert: Alert, op: Op | None = None) -> Place:
        """The place of an alert's tensor (a graph op's, or an eager execution's)."""
        reader = self._reader
        if alert.kind == "graph":
            if op is None:
                op_id, _ = reader.trace_op(alert.index)
                if op_id is None:
                    return Place("other")
                op = reader.op(op_id)
            return self.of_op(op)
        phase = phase_of_name(alert.op_type, None)
        if phase is None:
            phase = "gradient" if fmt.is_backward_call(alert.op_type) else "forward"
        frame = None
        try:
            stack_id = reader.execution(alert.index).stack_id
        except DumpError:
            return Place(phase)  # the execution left the disk: no stack to read
        frame = self._library_frame(stack_id)
        if phase == "forward" and self._in_metric(stack_id):
            phase = "metric"
        return Place(phase, None, frame)

    def of_op(self, op: Op) -> Place:
        cached = self._ops.get(op.id)
        if cached is None:
            cached = self._ops[op.id] = self._find(op)
        return cached

    def phase_of_op(self, op: Op) -> str:
        """The op's phase from names and its graph only (no stack is decoded)."""
        phase = phase_of_name(op.op_type, op.name)
        if phase is not None:
            return phase
        return "data" if is_dataset_graph(self._reader, op.graph_id) else "forward"

    def _find(self, op: Op) -> Place:
        phase = self.phase_of_op(op)
        frame = self._library_frame(op.stack_id)
        if phase == "forward" and frame is not None and _OPTIMIZER_FILE.search(frame.path):
            phase = "optimizer"  # a loss scaler's branch, an optimizer's own helper
        if phase == "forward" and self._in_metric(op.stack_id):
            phase = "metric"
        forward = op
        if phase == "gradient":
            forward = self._forward_op(op) or op
        layer = None
        if phase == "forward" or (phase == "gradient" and forward is not op):
            layer = self._layer(forward)
        if phase == "gradient" and forward is not op:
            return Place(phase, layer, frame, forward, self._user_frame(forward.stack_id))
        return Place(phase, layer, frame)

    def _user_frame(self, stack_id: int | None) -> Frame | None:
        try:
            return self._reader.innermost_user_frame(stack_id)
        except DumpError:
            return None

    def _forward_op(self, op: Op) -> Op | None:
        """The forward op a gradient op differentiates, by TensorFlow's naming: the
        gradient of ``a/b/MatMul`` is built under ``gradient_tape/a/b/MatMul/``; a
        ``<Type>Grad`` op (SqrtGrad, TanhGrad) reads its forward op's output first."""
        if op.op_type.endswith("Grad") and op.inputs and op.inputs[0].op_id is not None:
            try:
                first = self._reader.op(op.inputs[0].op_id)
            except DumpError:
                first = None
            if first is not None and first.op_type == op.op_type[: -len("Grad")]:
                return first
        name = op.name
        for scope in GRADIENT_SCOPES:
            if name.startswith(scope):
                name = name[len(scope) :]
                break
        parts = name.split("/")[:-1]
        while parts:
            found = self._reader.op_by_name(op.graph_id, "/".join(parts))
            if found is not None:
                return found
            parts.pop()
        # No op of that name (ReluGrad sits in the layer's scope, beside Relu): any
        # forward op of the gradient's scope.
        if "/" not in name:
            return None
        scope = name.rsplit("/", 1)[0] + "/"
        return next(
            (
                o
                for o in self._graph_ops(op.graph_id)
                if o.name.startswith(scope) and not is_gradient_name(o.op_type, o.name)
            ),
            None,
        )

    def _graph_ops(self, graph_id: int) -> list[Op]:
        if graph_id not in self._graphs:
            try:
                self._graphs[graph_id] = self._reader.graph_ops(graph_id)
            except DumpError:
                return []
        return self._graphs[graph_id]

    def _layer(self, op: Op) -> str | None:
        if op.layer is not None:
            return op.layer  # recorded by our dumper (format 2.2)
        # TensorFlow's dumps, and ours before 2.2: the name scope under a layer's call.
        if op.stack_id is None:
            return None
        try:
            frames = self._reader.stack(op.stack_id)
        except DumpError:
            return None
        if not any(_LAYER_CALL.search(f.path) and f.function == "__call__" for f in frames):
            return None
        parts = op.name.split("/")[:-1]
        while parts and _OP_SCOPE.match(parts[-1]):
            parts.pop()
        return "/".join(parts) or None

    def _in_metric(self, stack_id: int | None) -> bool:
        """Whether a creation or call stack runs under Keras' metrics machinery."""
        if stack_id is None:
            return False
        try:
            frames = self._reader.stack(stack_id)
        except DumpError:
            return False
        return any(_METRIC_FRAME.search(f"{f.path}:{f.function}") for f in frames)

    def _library_frame(self, stack_id: int | None) -> Frame | None:
        if stack_id is None:
            return None
        try:
            frames = self._reader.stack(stack_id)
        except DumpError:
            return None
        found = None
        for frame in frames:  # outermost first: the last match is the innermost
            if frame.is_user:
                found = None
            elif frame.file_id >= 0 and not _OP_PLUMBING.search(frame.path):
                found = frame
        return found
