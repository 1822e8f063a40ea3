"""Constants of the dump format: the one place the writer and the reader agree on
(normative spec: docs/format.md).

The normative description is docs/format.md; this module is its machine-readable
half, with the record contract (`reader.contract`: every record's keys). It imports
nothing but the standard library and the contract, so both `instrument` (inside a
training job) and `reader` (where TensorFlow is absent) can use it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from reader.contract import (
    DeviceRecord,
    EndRecord,
    ExecRecord,
    ExecsChunk,
    FileRecord,
    FrameRecord,
    GraphRecord,
    HeaderRecord,
    NoticeRecord,
    OpRecord,
    ProgressRecord,
    RunRecord,
    StackRecord,
    TracesChunk,
    WatchHitRecord,
    WatchSiteRecord,
    WatchStepsRecord,
)

FORMAT_NAME = "tfdbg-tui-dump"
# (major, minor). A reader refuses a newer major version; a newer minor version only
# adds fields or record kinds that an older reader may ignore.
# 1.1: `exec` records of function calls carry `c` (the call's ordinal among calls of
# the same function); under a circular buffer the first alert's window is pinned;
# stack frames carry the column span of their expression (`col`, `end_line`, `end_col`).
# 1.2: `notice` records in the metadata stream; `exec` records of executions in a thread
# other than the one that enabled the dump carry its name (`th`), and the `run` record
# names the enabling thread (`thread`).
# 2.0: executions are written in columnar `execs` chunks, not `exec` records, and a
# `traces` chunk may span several steps (`xr`): a 1.x reader would see no executions,
# so the major version changes and it refuses the dump with a message. The FULL_STATS
# mode (FULL_HEALTH's columns, then min, max, mean and std of the finite elements).
# This reader reads every 1.x dump too.
# 2.1: a TF1 `Session.run` is an execution (`session_run_op_type`), numbered with `c`;
# the dumper's own captured resources are no longer a call's inputs or a graph's ops.
# 2.2: FULL_HEALTH summaries carry the largest magnitude of a finite tensor's elements
# (`MAGNITUDE_COLUMN`), stored beside the rows (`m`) so that a 2.0 or 2.1 reader, which
# ignores the key, still reads the rows.
# 2.3: on an object store (s3://, gs://) a segment is written as consecutive part
# objects (`part_filename`), each closed at a flush; a 2.2 reader finds no run there.
# 2.4: an op that reads or writes a variable through a function graph's capture of its
# handle names the variable (`var`); a 2.3 reader ignores the key.
# 2.5: an object store's executions and graph traces gather several flushes in a part.
# 3.0: on an object store a part may be stored compressed (one Zstandard frame), its
# name carrying the bytes it holds (`part_filename`'s ``raw_size``). A 2.x reader would
# not know the name and read such a segment only up to it, silently: a run on an
# object store says 3.0 so that a 2.x reader refuses it. Local dumps did not change:
# they say 2.5 (what a run says: `written_version`), and 2.x readers read them as before.
# 3.1 and 2.6: the watch tier's records (`watch_site`, `watch_steps`, `watch_hit`) and
# the `run` record's `watch` and `replay_of`; older readers ignore them.
# 3.2 and 2.7: a multi-worker job's run keeps its progress file (`PROGRESS_FILENAME`:
# its first non-finite value and how far it has run, for the job's ranking); it is
# not a segment, so older readers ignore it.
# 3.3 and 2.8: an eager execution may carry names (`nm`): a `VarHandleOp` the variable's,
# a `RestoreV2` the checkpoint keys it read (`NAMING_OPS`); older readers ignore the key.
# 3.4 and 2.9: a watch site's rows end with each variable's update norm
# (`update_norm:<variable>` columns); older readers ignore the columns.
# 3.5 and 2.10: the watched update is checked before it is written: a `watch_hit`'s
# `check` "update" names a change the update was to make (not written), "variable" a
# variable found non-finite after an update wrote it ("update" before); the update
# norms are recorded every step. An older reader skips a "variable" hit.
FORMAT_VERSION = (3, 5)
LOCAL_FORMAT_VERSION = (2, 10)

# Where a watched step's replay keeps the values of its root cause's op: a logdir inside
# the replay's run directory, holding the values replay (`ReplayOfMap.VALUES`), a
# FULL_TENSOR run of that op and the ops of its inputs only (docs/format.md, "The
# watch tier").
REPLAY_VALUES_DIR = "values"


def written_version(remote: bool) -> tuple[int, int]:
    """The version a run's headers say: the oldest that reads it whole (3.0 on an
    object store, where parts may be compressed; 2.5 on a file system)."""
    return FORMAT_VERSION if remote else LOCAL_FORMAT_VERSION


FILE_SUFFIX = ".tfdbg"

# Streams, in the order the writer flushes them: definitions before the records that
# refer to them.
STREAM_METADATA = "metadata"
STREAM_SOURCE_FILES = "source_files"
STREAM_STACKS = "stacks"
STREAM_GRAPHS = "graphs"
STREAM_EXECUTIONS = "executions"
STREAM_GRAPH_TRACES = "graph_traces"
STREAMS = (
    STREAM_METADATA,
    STREAM_SOURCE_FILES,
    STREAM_STACKS,
    STREAM_GRAPHS,
    STREAM_EXECUTIONS,
    STREAM_GRAPH_TRACES,
)
# Streams that rotate to a new segment file (and delete old ones) under a circular
# buffer. Definition streams never rotate.
ROTATING_STREAMS = (STREAM_EXECUTIONS, STREAM_GRAPH_TRACES)


# The writer's space reserve in a run directory (instrument/dump/recording_stop.py): not a
# segment, so readers ignore it; deleted when recording stops on a write error.
RESERVE_FILENAME = "space_reserve"
# A multi-worker job's run's progress file (since 2.7 and 3.2): one `progress` record,
# replaced whole as the run goes on (docs/format.md, "The progress file"). Not a
# segment: readers that do not know it ignore it.
PROGRESS_FILENAME = "progress" + FILE_SUFFIX


def segment_filename(stream: str, segment: int) -> str:
    """File name of one segment of a stream, e.g. ``graph_traces.000003.tfdbg``."""
    return f"{stream}.{segment:06d}{FILE_SUFFIX}"


def parse_segment_filename(name: str) -> tuple[str, int] | None:
    """Inverse of `segment_filename`; None for a name that is not a segment file."""
    if not name.endswith(FILE_SUFFIX):
        return None
    stem = name[: -len(FILE_SUFFIX)]
    stream, _, number = stem.rpartition(".")
    if stream not in STREAMS or len(number) != 6 or not number.isdigit():
        return None
    return stream, int(number)


class PartName(NamedTuple):
    """What a part object's name says (`parse_part_filename`)."""

    stream: str
    segment: int
    part: int
    raw_size: int | None
    """The segment bytes a compressed part holds (since 2.5); None: the object's bytes
    are the segment's as they are."""


def part_filename(stream: str, segment: int, part: int, raw_size: int | None = None) -> str:
    """Name of one part object of a segment on an object store (since 2.3), e.g.
    ``graph_traces.000003.000017.tfdbg``: the segment's bytes are its parts' bytes,
    in part order. With ``raw_size`` (since 3.0) the object is a Zstandard frame of
    that many bytes of the segment: ``graph_traces.000003.000017.zst3800044.tfdbg``."""
    name = f"{stream}.{segment:06d}.{part:06d}"
    if raw_size is not None:
        name += f".{PART_CODEC_PREFIX}{raw_size}"
    return name + FILE_SUFFIX


def parse_part_filename(name: str) -> PartName | None:
    """Inverse of `part_filename`; None for a name that is not a part."""
    if not name.endswith(FILE_SUFFIX):
        return None
    stem = name[: -len(FILE_SUFFIX)]
    raw_size = None
    rest, _, last = stem.rpartition(".")
    if last.startswith(PART_CODEC_PREFIX):
        digits = last[len(PART_CODEC_PREFIX) :]
        if not digits.isdigit() or len(digits) > 20:
            return None
        stem, raw_size = rest, int(digits)
    stem, _, part = stem.rpartition(".")
    parsed = parse_segment_filename(stem + FILE_SUFFIX)
    if parsed is None or len(part) < 6 or not part.isdigit():
        return None
    return PartName(parsed[0], parsed[1], int(part), raw_size)


# The tag of a compressed part's name (`part_filename`), before the bytes it holds.
PART_CODEC_PREFIX = "zst"
# The most segment bytes one compressed part may hold: a writer puts a larger part as
# it is, and a reader takes a name claiming more (or more than Zstandard's largest ratio
# allows for the object's size) as damage, so that no few bytes make it inflate
# gigabytes (docs/format.md sections 8 and 9).
MAX_COMPRESSED_PART_BYTES = 64 << 20


# The runtime names of an eager call of a tf.function: `__inference_<name>_<n>`, or
# `__forward_<name>_<n>` when a GradientTape records the call (its `__backward_`
# partner runs the gradient, in the same step). The writer records an eager op whose
# type starts with one of these as a function call; the reader counts it as one even
# when the call's graph is unknown.
BACKWARD_PREFIX = "__backward_"
FUNCTION_PREFIXES = ("__inference_", "__forward_", BACKWARD_PREFIX)


def is_function_call(op_type: str) -> bool:
    """True when an eager execution's op type names a tf.function call."""
    return op_type.startswith(FUNCTION_PREFIXES)


def is_backward_call(op_type: str) -> bool:
    """True when an eager execution's op type names the gradient half of a call that a
    GradientTape recorded (``__backward_<name>_<n>``)."""
    return op_type.startswith(BACKWARD_PREFIX)


def function_base_name(op_type: str) -> str:
    """``op_type`` without its function-call prefix (``__inference_step_7`` ->
    ``step_7``); an eager op's type unchanged."""
    for prefix in FUNCTION_PREFIXES:
        if op_type.startswith(prefix):
            return op_type[len(prefix) :]
    return op_type


_STEP_FUNCTION_NAME = re.compile(r"^__(?:inference|forward)_(.+?)_\d+$")


# A TF1 ``Session.run`` is recorded as one execution of the graph it ran (format 2.1),
# named by what it fetched: ``Session.run(train, loss:0)``. Its runs are numbered as a
# function's calls are, so that a loop of ``Session.run`` calls has steps.
SESSION_RUN_PREFIX = "Session.run("
# Fetch names beyond this many characters are cut (with "...").
SESSION_RUN_MAX_NAME = 120


def session_run_op_type(fetch_names: list[str]) -> str:
    """The op type of a ``Session.run`` that fetched ``fetch_names``."""
    names = ", ".join(fetch_names)
    if len(names) > SESSION_RUN_MAX_NAME:
        names = names[: SESSION_RUN_MAX_NAME - 3] + "..."
    return f"{SESSION_RUN_PREFIX}{names})"


def is_session_run(op_type: str) -> bool:
    """True when an execution's op type names a TF1 ``Session.run``."""
    return op_type.startswith(SESSION_RUN_PREFIX)


def step_function_name(op_type: str) -> str | None:
    """The Python function an eager call runs (``train_step``), the whole op type of a
    ``Session.run`` (runs of the same fetches count as calls of one function), or None.

    None for eager ops and ``__backward_`` calls. The writer numbers the calls of each
    such function (an `exec` record's `c`); the reader finds steps from them.
    """
    if op_type.startswith(SESSION_RUN_PREFIX):
        return op_type
    match = _STEP_FUNCTION_NAME.match(op_type)
    return match.group(1) if match else None


# Record kinds: the value of every record's "k" key. Their keys, types and versions are
# the record contract's (`reader.contract`); these names are its kinds, for short.
KIND_HEADER = HeaderRecord.KIND  # first record of every file
KIND_RUN = RunRecord.KIND  # metadata: the run's description
KIND_DEVICE = DeviceRecord.KIND  # metadata: a device name, with an id
KIND_END = EndRecord.KIND  # metadata: the run closed cleanly
KIND_FILE = FileRecord.KIND  # source_files: a source file and its snapshot
KIND_FRAME = FrameRecord.KIND  # stacks: one stack frame
KIND_STACK = StackRecord.KIND  # stacks: a list of frame ids
KIND_GRAPH = GraphRecord.KIND  # graphs: a graph (FuncGraph, while/cond body, TF1 graph)
KIND_OP = OpRecord.KIND  # graphs: an op created in a graph
KIND_EXECUTION = ExecRecord.KIND  # executions: one eager op or function call (format 1.x)
KIND_EXECUTION_CHUNK = ExecsChunk.KIND  # executions: a chunk of executions, columnar (2.0)
KIND_TRACES = TracesChunk.KIND  # graph_traces: a chunk of graph execution traces
KIND_NOTICE = NoticeRecord.KIND  # metadata: something the user should know about the recording
KIND_WATCH_SITE = WatchSiteRecord.KIND  # metadata: a watched optimizer and its step columns (2.6)
KIND_WATCH_STEPS = WatchStepsRecord.KIND  # metadata: rows of a watched optimizer's steps (2.6)
KIND_WATCH_HIT = WatchHitRecord.KIND  # metadata: the watch tier's first non-finite step (2.6)
KIND_PROGRESS = ProgressRecord.KIND  # the progress file: a job's run's first alert (2.7)

# Ops whose output is a value another worker or replica sent (all-reduce, gather,
# broadcast, all-to-all, reduce-scatter, NCCL's, a receive): what such an op outputs
# non-finite was made elsewhere. The writer says so of a run's first alert (the
# progress file's `received`) and the reader of a root cause (`reader.analysis.jobs`,
# the diagnosis).
RECEIVING_OPS = frozenset(
    {
        "CollectiveReduce",
        "CollectiveReduceV2",
        "CollectiveReduceV3",
        "CollectiveGather",
        "CollectiveGatherV2",
        "CollectiveBcastRecv",
        "CollectiveBcastRecvV2",
        "CollectiveAllToAllV2",
        "CollectiveAllToAllV3",
        "CollectiveReduceScatterV2",
        "NcclAllReduce",
        "NcclReduce",
        "NcclBroadcast",
        "_Recv",
        "_HostRecv",
    }
)

# Eager ops whose execution carries names (`ExecRecord.NAMES`, since 2.8), which the
# diagnosis of a restored or assigned variable reads: a `VarHandleOp` the variable's
# name (its `debug_name`), a `RestoreV2` its checkpoint keys, one per output slot.
NAMING_OPS = frozenset({"VarHandleOp", "RestoreV2"})

# Notices (docs/format.md section 4, `notice`): what the writer could not record, or
# recorded differently, and settings that change what a dump holds. A notice's level
# is a warning when part of the program may be missing from the dump.
NOTICE_WARNING = "warning"
NOTICE_INFO = "info"
NOTICE_LEVELS = (NOTICE_WARNING, NOTICE_INFO)
NOTICE_XLA_TRACED = "xla_traced"  # a function compiled with XLA, traced by variables
NOTICE_XLA_UNTRACED = "xla_untraced"  # tensors inside XLA that are not traced
NOTICE_XLA_AUTO_CLUSTERING = "xla_auto_clustering"  # tf.config.optimizer.set_jit
NOTICE_FUNCTIONS_RUN_EAGERLY = "functions_run_eagerly"  # tf.config.run_functions_eagerly
NOTICE_MIXED_PRECISION = "mixed_precision"  # a Keras policy other than float32
NOTICE_TRACED_BEFORE_ENABLE = "traced_before_enable"  # a function called, blind inside
NOTICE_FILTERS = "filters"  # op_regex / tensor_dtypes in effect
NOTICE_CIRCULAR_BUFFER = "circular_buffer"  # circular_buffer_size > 0
NOTICE_THREADS_BEFORE_ENABLE = "threads_before_enable"  # threads the dump cannot see
NOTICE_THREAD = "thread"  # TF work recorded from another Python thread
NOTICE_TF1_UNTRACED = "tf1_untraced"  # TF1 tensors the session route cannot trace
NOTICE_RECORDING_STOPPED = "recording_stopped"  # a write failed: nothing after is recorded

# Tensor debug modes and the summary columns each one records per tensor. Columns are
# those of TensorFlow's DebugNumericSummaryV2 without its tensor-id column (and, for
# FULL_HEALTH, without the device-type column): dtypes are TF DataType enum values.
NO_TENSOR = "NO_TENSOR"
CURT_HEALTH = "CURT_HEALTH"
CONCISE_HEALTH = "CONCISE_HEALTH"
FULL_HEALTH = "FULL_HEALTH"
SHAPE = "SHAPE"
FULL_TENSOR = "FULL_TENSOR"
# Not a TensorFlow mode (since format 2.0): FULL_HEALTH plus statistics of the finite
# elements, which TensorFlow's first summary op had and DebugNumericSummaryV2 dropped.
FULL_STATS = "FULL_STATS"
TENSOR_DEBUG_MODES = (
    NO_TENSOR,
    CURT_HEALTH,
    CONCISE_HEALTH,
    FULL_HEALTH,
    FULL_STATS,
    SHAPE,
    FULL_TENSOR,
)
# The modes whose summaries count NaN and infinities.
HEALTH_MODES = (CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH, FULL_STATS)
# The modes that record whether a tensor held NaN or infinity.
ALERT_MODES = HEALTH_MODES + (FULL_TENSOR,)

# FULL_TENSOR value codecs (docs/format.md section 6): the value of a value map's
# "codec" key. Absent (or nil) means `data` holds the raw elements.
CODEC_ZLIB = "zlib"  # data is a zlib stream of the raw elements
CODEC_SHUFFLE_ZLIB = "shuffle-zlib"  # a zlib stream of the raw elements, byte-shuffled
VALUE_CODECS = (CODEC_ZLIB, CODEC_SHUFFLE_ZLIB)
# The most raw bytes a compressed value may hold: a writer stores a larger value raw,
# and a reader takes a compressed value claiming more as damaged, so that no few bytes
# of a dump can make it inflate gigabytes (docs/format.md section 8).
MAX_COMPRESSED_VALUE_BYTES = 64 << 20

# SHAPE mode keeps six dimensions: past rank 6 the last six, as TensorFlow's kernel does.
MAX_SHAPE_RANK = 6
# FULL_STATS' statistics of the finite elements (std: population, ddof 0); NaN in a
# row when the tensor has no finite element.
STAT_COLUMNS = ("min", "max", "mean", "std")
SUMMARY_COLUMNS: dict[str, tuple[str, ...]] = {
    NO_TENSOR: (),
    CURT_HEALTH: ("has_inf_or_nan",),
    CONCISE_HEALTH: ("size", "neg_inf", "pos_inf", "nan"),
    FULL_HEALTH: ("dtype", "rank", "size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos"),
    FULL_STATS: ("dtype", "rank", "size", "neg_inf", "pos_inf", "nan", "neg", "zero", "pos")
    + STAT_COLUMNS,
    SHAPE: ("dtype", "rank", "size") + tuple(f"shape{i}" for i in range(MAX_SHAPE_RANK)),
    FULL_TENSOR: (),
}

# The largest magnitude |x| of a tensor's elements when all of them are finite (NaN in
# a row when one is not, or when the dump does not say: TensorFlow's own dumps, and ours
# before format 2.2). Our FULL_HEALTH dumps store it per summary apart from the row
# (`m`, docs/format.md section 5); in memory it is the row's last column (`ROW_COLUMNS`).
# It shows a tensor's growth step by step, as FULL_STATS' min and max do.
MAGNITUDE_COLUMN = "max_abs"
# The modes whose rows store the magnitude beside them (FULL_STATS has min and max).
MAGNITUDE_MODES = (FULL_HEALTH,)
# Summary rows as the writer builds them and the reader's indexes keep them: a mode's
# `SUMMARY_COLUMNS`, and in `MAGNITUDE_MODES` the magnitude after them.
ROW_COLUMNS: dict[str, tuple[str, ...]] = {
    mode: columns + ((MAGNITUDE_COLUMN,) if mode in MAGNITUDE_MODES else ())
    for mode, columns in SUMMARY_COLUMNS.items()
}
# The widths of rows that end with their magnitude.
MAGNITUDE_ROW_WIDTHS = frozenset(len(ROW_COLUMNS[mode]) for mode in MAGNITUDE_MODES)

# TensorFlow's TensorDebugMode enum (tensorflow/core/protobuf/debug_event.proto): the
# `tensor_debug_mode` attribute of DebugNumericSummaryV2, and the mode TensorFlow's own
# dumps record in each execution and trace.
TF_TENSOR_DEBUG_MODE_ENUM = {
    NO_TENSOR: 1,
    CURT_HEALTH: 2,
    CONCISE_HEALTH: 3,
    FULL_HEALTH: 4,
    SHAPE: 5,
    FULL_TENSOR: 7,
}
# The columns of DebugNumericSummaryV2's output (a float64 vector, in instrument's
# summaries and in TensorFlow's own dumps) that SUMMARY_COLUMNS keeps, per mode:
# column 0 is the tensor id, FULL_HEALTH's column 1 the device type.
TF_SUMMARY_KEPT_COLUMNS = {
    CURT_HEALTH: slice(1, 2),
    CONCISE_HEALTH: slice(1, 5),
    FULL_HEALTH: slice(2, 11),
    SHAPE: slice(1, 10),
}

# TensorFlow DataType enum values (tensorflow/core/framework/types.proto) to names, so
# the reader can name a dtype without importing TensorFlow.
DTYPE_NAMES: dict[int, str] = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}
