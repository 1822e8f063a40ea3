"""The values the reader hands out: small, immutable, and free of msgpack details."""

from __future__ import annotations

from dataclasses import dataclass, field

from reader import format as fmt


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


@dataclass(frozen=True, slots=True)
class RunMetadata:
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

    @property
    def is_alert(self) -> bool:
        """True when the tensor held a NaN or an infinity."""
        if self.has_inf_or_nan is not None:
            return self.has_inf_or_nan
        return bool(self.nan or self.neg_inf or self.pos_inf)

    @classmethod
    def from_row(cls, mode: str, row) -> Summary:
        """Build from one row of summary columns (`reader.format.SUMMARY_COLUMNS`)."""
        cols = dict(zip(fmt.SUMMARY_COLUMNS[mode], (float(x) for x in row)))
        kw: dict = {"mode": mode}
        if "dtype" in cols:
            kw["dtype"] = fmt.DTYPE_NAMES.get(int(cols["dtype"]), f"dtype{int(cols['dtype'])}")
        for name in ("rank", "size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos"):
            if name in cols:
                kw[name] = int(cols[name])
        if "has_inf_or_nan" in cols:
            kw["has_inf_or_nan"] = bool(cols["has_inf_or_nan"])
        if "shape0" in cols:
            rank = min(int(cols["rank"]), fmt.MAX_SHAPE_RANK)
            kw["shape"] = tuple(int(cols[f"shape{i}"]) for i in range(rank))
        return cls(**kw)


@dataclass(frozen=True, slots=True)
class SourceFile:
    id: int
    path: str
    host: str | None
    lines: tuple[str, ...] | None  # the snapshot; None when `omitted` says why
    is_library: bool
    omitted: str | None


@dataclass(frozen=True, slots=True)
class Frame:
    id: int
    file_id: int
    path: str
    line: int
    function: str
    is_user: bool  # not Python, site-packages, TensorFlow, Keras or the instrumentation


@dataclass(frozen=True, slots=True)
class Graph:
    id: int
    name: str | None
    outer_id: int | None
    function_name: str | None


@dataclass(frozen=True, slots=True)
class TensorRef:
    """An op's input: the tensor name and, once resolved, the producing op."""

    name: str  # "op_name:slot"
    op_id: int | None
    slot: int


@dataclass(frozen=True, slots=True)
class Op:
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

    @property
    def is_function(self) -> bool:
        return self.graph_id is not None or self.op_type.startswith("__inference_")

    @property
    def is_alert(self) -> bool:
        return any(s is not None and s.is_alert for s in self.summaries or ())


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
    nan: int
    neg_inf: int
    pos_inf: int
    step: int

    @property
    def alert_type(self) -> str:
        """The alert's type for counting: the most specific non-finite kind present."""
        if self.nan:
            return "NaN"
        if self.neg_inf and self.pos_inf:
            return "±inf"
        return "-inf" if self.neg_inf else "+inf" if self.pos_inf else "inf/NaN"


@dataclass(frozen=True, slots=True)
class UpdateReport:
    """What one `DumpReader.update()` call read."""

    new_executions: int = 0
    new_traces: int = 0
    new_alerts: int = 0
    new_graphs: int = 0
    new_ops: int = 0
    damage: tuple[str, ...] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        return bool(self.new_executions or self.new_traces or self.new_alerts
                    or self.new_graphs or self.new_ops or self.damage)
