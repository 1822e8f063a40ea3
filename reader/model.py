"""The values the reader hands out (`Execution`, `Trace`, `Op`, `Frame`, `Alert`,
`RootCause`, `EagerInput`, ...): small, immutable, and free of msgpack details."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reader import format as fmt

if TYPE_CHECKING:
    from reader.progress import RunProgress

# Who wrote a run: `instrument` (our format), or TensorFlow's own dumper.
DUMPER_TFDBG_TUI = "tfdbg-tui"
DUMPER_TENSORFLOW = "tensorflow"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run in a logdir, as listed by `reader.list_runs`."""

    run_id: str
    path: str
    host: str | None
    pid: int | None
    start_time: float | None
    tensor_debug_mode: str | None
    finished: bool  # an `end` record was read: the process exited cleanly
    format_version: tuple[int, int] | None = None  # from the metadata header; None if unreadable
    task: str | None = None  # a multi-worker job's task ("worker 1"), from TF_CONFIG
    cluster: str | None = None  # the job's cluster id, the same in all its runs
    stopped: bool = False  # recording stopped on a write error (`liveness.recording_stopped`)
    dumper: str = DUMPER_TFDBG_TUI  # or DUMPER_TENSORFLOW: a file set of TensorFlow's dumper
    watched: bool = False  # a watched run (the watch tier, `instrument.watch`)
    replay_of: ReplayOf | None = None  # the replay of a watched run's step
    # A job's run listed from its progress file (in a bucket: one request instead of
    # its listing and its metadata's parts); None when it was listed from its metadata.
    progress: RunProgress | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RunMetadata:
    """The run's description (the metadata stream's `run` record)."""

    run_id: str
    format_version: tuple[int, int]
    tensor_debug_mode: str
    circular_buffer_size: int
    host: str | None
    pid: int | None
    start_time: float | None
    tf_version: str | None
    python_version: str | None
    argv: tuple[str, ...]
    eager_mode: bool
    finished: bool
    devices: tuple[str, ...] = ()  # device names in device id order, as read so far
    op_regex: str | None = None
    tensor_dtypes: tuple[str, ...] | None = None
    end_time: float | None = None  # from the `end` record of a cleanly closed run
    thread: str | None = None  # the Python thread that enabled the dump (format 1.2)
    # A multi-worker job's task ("worker 1", from TF_CONFIG) and cluster id (the same in
    # every process of the job); None outside one.
    task: str | None = None
    cluster: str | None = None
    space_reserve: bool = False  # the writer keeps a space reserve (format 1.2)
    dumper: str = DUMPER_TFDBG_TUI  # or DUMPER_TENSORFLOW (`RunInfo.dumper`)
    # The watch tier (format 2.6): a watched run's `run` record says so; a replay's
    # names the watched run and the step it replays (`ReplayOf`).
    watched: bool = False
    replay_of: ReplayOf | None = None


@dataclass(frozen=True)
class ReplayOf:
    """The watched step a replay run replays (its `run` record's ``replay_of``)."""

    run_id: str
    step: int
    check: str | None = None
    tensor: str | None = None
    xla: bool = False  # the replay ran compiled with XLA
    # A values replay (beside a replay, `reader.format.REPLAY_VALUES_DIR`): the names of
    # the ops it keeps the values of, the root cause's and its inputs'; None: a whole replay.
    values: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """A tensor's numeric summary; fields the run's mode does not record are None."""

    mode: str
    dtype: str | None = None
    rank: int | None = None
    size: int | None = None
    neg_inf: int | None = None
    pos_inf: int | None = None
    nan: int | None = None
    neg: int | None = None
    zero: int | None = None
    pos: int | None = None
    shape: tuple[int, ...] | None = None
    has_inf_or_nan: bool | None = None
    # FULL_STATS: statistics of the finite elements; None when there are none.
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    # FULL_HEALTH (since format 2.2) and FULL_STATS: the largest magnitude of a finite
    # tensor's elements (`reader.format.MAGNITUDE_COLUMN`); None when an element is not
    # finite, or the dump does not say.
    max_abs: float | None = None

    @property
    def is_alert(self) -> bool:
        """True when the tensor held a NaN or an infinity."""
        if self.has_inf_or_nan is not None:
            return self.has_inf_or_nan
        return bool(self.nan or self.neg_inf or self.pos_inf)

    @classmethod
    def from_row(cls, mode: str, row) -> Summary:
        """Build from one row of summary columns (`reader.format.SUMMARY_COLUMNS`).

        Raises:
            ValueError: The row's length does not fit the mode, or a count is not finite.
        """
        values = row.tolist() if hasattr(row, "tolist") else list(row)
        stored, kept = len(fmt.SUMMARY_COLUMNS[mode]), len(fmt.ROW_COLUMNS[mode])
        if len(values) not in (stored, kept):
            raise ValueError(f"a {mode} summary has {kept} columns, not {len(values)}")
        # Positional per mode: painting a screen of rows builds many of these.
        v = values
        if mode == fmt.FULL_HEALTH:
            return cls(
                mode,
                _dtype_name(v[0]),
                int(v[1]),
                int(v[2]),
                int(v[3]),
                int(v[4]),
                int(v[5]),
                int(v[6]),
                int(v[7]),
                int(v[8]),
                max_abs=_stat(v[9]) if len(v) > 9 else None,
            )
        if mode == fmt.FULL_STATS:
            low, high = _stat(v[9]), _stat(v[10])
            finite = not (v[3] or v[4] or v[5])
            return cls(
                mode,
                _dtype_name(v[0]),
                int(v[1]),
                int(v[2]),
                int(v[3]),
                int(v[4]),
                int(v[5]),
                int(v[6]),
                int(v[7]),
                int(v[8]),
                min=low,
                max=high,
                mean=_stat(v[11]),
                std=_stat(v[12]),
                max_abs=max(abs(low), abs(high))
                if finite and low is not None and high is not None
                else None,
            )
        if mode == fmt.CONCISE_HEALTH:
            return cls(mode, None, None, int(v[0]), int(v[1]), int(v[2]), int(v[3]))
        if mode == fmt.CURT_HEALTH:
            return cls(mode, has_inf_or_nan=bool(v[0]))
        if mode == fmt.SHAPE:
            rank = int(v[1])
            return cls(
                mode,
                _dtype_name(v[0]),
                rank,
                int(v[2]),
                shape=tuple(int(d) for d in v[3 : 3 + min(rank, fmt.MAX_SHAPE_RANK)]),
            )
        return cls(mode)


def _stat(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _dtype_name(code: float) -> str:
    return fmt.DTYPE_NAMES.get(int(code)) or f"dtype{int(code)}"


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A source file and, unless `omitted` says why not, its text as one tuple of lines."""

    id: int
    path: str
    host: str | None
    lines: tuple[str, ...] | None  # the snapshot; None when `omitted` says why
    is_library: bool
    omitted: str | None


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame. A frame whose definition is not read yet has `file_id` -1."""

    id: int
    file_id: int
    path: str
    line: int
    function: str
    is_user: bool  # not Python, site-packages, TensorFlow, Keras or the instrumentation
    # The span of the frame's current instruction (the exact expression), when the
    # dump records it: 0-based character columns, `end_column` exclusive and on
    # `end_line` (which is `line` unless the expression spans lines).
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None


def innermost_user_position(frames: list[Frame] | tuple[Frame, ...]) -> int | None:
    """Position of the innermost user frame in ``frames`` (outermost first), or None."""
    for position in range(len(frames) - 1, -1, -1):
        if frames[position].is_user:
            return position
    return None


@dataclass(frozen=True, slots=True)
class Graph:
    """A graph: a FuncGraph (tf.function, while/cond body) or a TF1 graph."""

    id: int
    name: str | None
    outer_id: int | None
    function_name: str | None


@dataclass(frozen=True, slots=True)
class TensorRef:
    """An op's input: the tensor name and, once resolved, the producing op."""

    name: str  # "op_name:slot" for a graph tensor; "<op type>:<slot>" for an eager one
    op_id: int | None
    slot: int
    execution_index: int | None = None  # eager input: the execution that produced it


@dataclass(frozen=True, slots=True)
class Op:
    """An op created in a graph; `trace_points[slot]` is None for an untraced output."""

    id: int
    graph_id: int
    op_type: str
    name: str
    inputs: tuple[TensorRef, ...]
    num_outputs: int
    output_dtypes: tuple[str, ...]
    device: str | None
    stack_id: int | None
    trace_points: tuple[int | None, ...]
    # The path of the Keras layer whose call built the op (format 2.2), or None.
    layer: str | None = None
    # The variable the op reads or writes through a function graph's capture of its
    # handle (format 2.4), or None.
    variable: str | None = None
    # A ``Const`` whose value holds a NaN, known when its graph was built (format 2.6):
    # never a deliberate infinity, also where the mode cannot tell NaN from infinity.
    constant_nan: bool = False


@dataclass(frozen=True, slots=True)
class Execution:
    """One eager execution: an op, or a call of a tf.function (`graph_id` set)."""

    index: int
    op_type: str
    graph_id: int | None
    input_ids: tuple[int, ...]
    output_ids: tuple[int, ...]
    devices: tuple[str | None, ...]
    output_dtypes: tuple[str, ...]
    stack_id: int | None
    time: float | None
    summaries: tuple[Summary | None, ...] | None
    # The Python thread it ran in, when not the one that enabled the dump (format 1.2).
    thread: str | None = None
    # What it names (format 2.8, `reader.format.NAMING_OPS`): a `VarHandleOp` its
    # variable, a `RestoreV2` its checkpoint keys (one per output slot); else None.
    names: tuple[str, ...] | None = None

    @property
    def is_function(self) -> bool:
        """True for a call of a tf.function, False for an eager op."""
        return self.graph_id is not None or fmt.is_function_call(self.op_type)

    @property
    def is_alert(self) -> bool:
        """True when an output held a NaN or an infinity."""
        return any(s is not None and s.is_alert for s in self.summaries or ())

    def summary(self, slot: int) -> Summary | None:
        """Output ``slot``'s summary; None when the mode records none or has no such slot."""
        summaries = self.summaries or ()
        return summaries[slot] if 0 <= slot < len(summaries) else None


@dataclass(frozen=True, slots=True)
class EagerInput:
    """An input tensor of an eager execution and, when on disk, the execution that
    output it (`reader.analysis.hunt.inputs.eager_inputs`)."""

    tensor_id: int
    producer_index: int | None  # None: made outside any op callback, or left the disk
    producer_op_type: str | None
    slot: int  # the producer's output slot
    summary: Summary | None  # the producer's summary of that output

    @property
    def name(self) -> str:
        """``"Op:slot"`` of the producer, or ``"tensor <id>"`` without one."""
        if self.producer_index is None:
            return f"tensor {self.tensor_id}"
        return f"{self.producer_op_type}:{self.slot}"


@dataclass(frozen=True, slots=True)
class Trace:
    """One graph execution trace: an op's output computed inside a graph."""

    index: int
    trace_point: int
    op_id: int | None  # None while the op's definition has not been read
    slot: int
    step: int  # the execution index of the top-level call it ran in
    summary: Summary | None


@dataclass(frozen=True, slots=True)
class Alert:
    """A tensor that held NaN or infinity, from an eager execution or a graph trace."""

    kind: str  # "eager" | "graph"
    index: int  # execution index (eager) or trace index (graph)
    op_type: str
    op_name: str | None
    slot: int
    graph_name: str | None
    device: str | None
    nan: int  # element counts; -1 when the mode records none (CURT_HEALTH)
    neg_inf: int
    pos_inf: int
    step: int  # the execution index of the top-level call (graph) or the execution itself
    # Why the value did no harm (`reader.analysis.hunt.harm.CONTAINED_REASONS`); None: harmful.
    contained: str | None = None

    @property
    def tensor_name(self) -> str:
        """``"op_name:slot"`` of a graph tensor; ``"<op type>:<slot>"`` of an eager one."""
        return f"{self.op_name if self.op_name is not None else self.op_type}:{self.slot}"

    @property
    def alert_type(self) -> str:
        """The alert's type for counting: the most specific non-finite kind present.

        One of `ALERT_TYPES`; "inf/NaN" when the mode records no counts (CURT_HEALTH).
        """
        return alert_type_of(self.nan, self.neg_inf, self.pos_inf)


ALERT_TYPES = ("NaN", "±inf", "-inf", "+inf", "inf/NaN")
# Why a non-finite value did no harm (`reader.analysis.hunt.harm`); as codes, a harmful
# value is `HARMFUL` and reason i is i + 1.
CONTAINED_REASONS = ("deliberate", "loss_scale", "discarded")
HARMFUL = 0


def alert_type_of(nan: int, neg_inf: int, pos_inf: int) -> str:
    """The alert type for counts of NaN, -inf and +inf elements (-1: unknown)."""
    if nan > 0:
        return "NaN"
    if neg_inf > 0 and pos_inf > 0:
        return "±inf"
    return "-inf" if neg_inf > 0 else "+inf" if pos_inf > 0 else "inf/NaN"


@dataclass(frozen=True, slots=True)
class UpdateReport:
    """What one `DumpReader.update()` call read."""

    new_executions: int = 0
    new_traces: int = 0
    new_alerts: int = 0
    new_graphs: int = 0
    new_ops: int = 0
    damage: tuple[str, ...] = field(default_factory=tuple)  # notices new in this call
    dropped_executions: int = 0  # left the disk (circular buffer): first_execution moved
    dropped_traces: int = 0  # likewise for graph traces
    new_definitions: int = 0  # source files, frames, stacks, devices
    finished: bool = False  # the run's `end` record arrived in this call
    new_notices: int = 0  # `notice` records (`DumpReader.notices`)

    @property
    def changed(self) -> bool:
        """True when anything visible changed."""
        return bool(
            self.new_executions
            or self.new_traces
            or self.new_alerts
            or self.new_graphs
            or self.new_ops
            or self.damage
            or self.dropped_executions
            or self.dropped_traces
            or self.new_definitions
            or self.finished
            or self.new_notices
        )


@dataclass(frozen=True, slots=True)
class AlertSummary:
    """All alerts of a run: exact totals, and the first alerts of each type in order.

    Attributes:
        total: Number of alerts (non-finite tensors), uncapped.
        counts: Alerts per `Alert.alert_type`, uncapped.
        alerts: The first `limit_per_type` alerts of each type, merged in true
            execution order (graph traces of step x just before execution x).
        contained: Contained alerts per reason; empty when not classified.
        harmful: How many alerts are harmful (None: not classified, all count).
    """

    total: int
    counts: dict[str, int]
    alerts: list[Alert]
    # Contained alerts per reason (`reader.analysis.hunt.harm`), and how many are harmful.
    contained: dict[str, int] = field(default_factory=dict)
    harmful: int | None = None


@dataclass(frozen=True, slots=True)
class RootCause:
    """The op that made the first non-finite tensor, found by walking back its inputs.

    Attributes:
        alert: The root-cause tensor's own alert (the op whose inputs were all finite
            and whose output was not).
        first_alert: The first alert in execution order, where the walk started; the
            same as `alert` unless a non-finite input led further back.
        op: The graph op (graph alerts), or None for an eager execution.
        execution: The eager execution (eager alerts), or the top-level call
            (step) a graph alert ran in, when still on disk.
        trace: The graph trace of the root-cause tensor (graph alerts).
        inputs: Each input tensor with its summary (None when unknown: not traced,
            not summarised, or produced outside the dump).
        input_indices: Per input, the trace index (graph) or execution index (eager)
            whose summary is shown, or None.
        frame: The innermost user frame of the op's creation stack (graph) or the
            execution's call stack (eager), or None when no user frame is known.
        line_text: That frame's source line from the snapshot, or None.
    """

    alert: Alert
    op: Op | None
    execution: Execution | None
    trace: Trace | None
    inputs: list[tuple[TensorRef, Summary | None]]
    frame: Frame | None
    line_text: str | None
    first_alert: Alert | None = None
    input_indices: list[int | None] = field(default_factory=list)
