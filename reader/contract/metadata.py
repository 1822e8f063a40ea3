"""The metadata stream's kinds: the segment header (`HeaderRecord`, every stream's
first), the run (`RunRecord` with its `TaskMap`, `WatchMap` and `ReplayOfMap`), its
devices, the writer's notices, the clean end, and the watch tier's `WatchSiteRecord`,
`WatchStepsRecord`, `WatchHitRecord` (docs/format.md sections 2 and 4)."""

from __future__ import annotations

from typing import Final

from reader.contract.fields import FieldTable, RecordKind, field


class HeaderRecord(RecordKind):
    """The first record of every segment: whose file it is and its format version."""

    KIND = "header"
    FORMAT: Final = field("format", str, 'always "tfdbg-tui-dump"')
    VERSION: Final = field("version", list, "[major, minor]: the oldest that reads the run")
    STREAM: Final = field("stream", str, "the stream, as in the file name")
    RUN: Final = field("run", str, "the run id, as the directory name")
    SEGMENT: Final = field("segment", int, "the segment number, as in the file name")


class RunRecord(RecordKind):
    """The run: one instrumented process, its settings and where it ran (once, right
    after the metadata stream's header)."""

    KIND = "run"
    RUN: Final = field("run", str, "run id")
    FORMAT_VERSION: Final = field("format_version", list, "[major, minor]")
    TENSOR_DEBUG_MODE: Final = field("tensor_debug_mode", str, "the mode of every summary")
    CIRCULAR_BUFFER_SIZE: Final = field("circular_buffer_size", int, "N > 0: a circular buffer")
    HOST: Final = field("host", str, "the host it ran on")
    PID: Final = field("pid", int, "its process id")
    START_TIME: Final = field("start_time", float, "Unix time")
    TF_VERSION: Final = field("tf_version", str, "TensorFlow's version")
    PYTHON_VERSION: Final = field("python_version", str, "Python's version")
    ARGV: Final = field("argv", list, "the program's command line")
    OP_REGEX: Final = field("op_regex", str, "the op filter", nullable=True)
    TENSOR_DTYPES: Final = field("tensor_dtypes", list, "the dtype filter", nullable=True)
    EAGER_MODE: Final = field("eager_mode", bool, "false for a TF1 program")
    THREAD: Final = field("thread", str, "the thread that enabled the dump", since=(1, 2))
    TASK: Final = field(
        "task", dict, "a multi-worker job's task (`TaskMap`)", since=(1, 2), nullable=True
    )
    SPACE_RESERVE: Final = field(
        "space_reserve", bool, "a space_reserve file is kept", since=(1, 2)
    )
    WATCH: Final = field("watch", dict, "a watched run (`WatchMap`)", since=(2, 6))
    REPLAY_OF: Final = field(
        "replay_of", dict, "the watched step it replays (`ReplayOfMap`)", since=(2, 6)
    )
    DUMPER: Final = field("dumper", str, "who wrote the run, when not instrument", written=False)
    TFDBG_RUN_ID: Final = field("tfdbg_run_id", str, "TensorFlow's own run id", written=False)


class TaskMap(FieldTable):
    """A `RunRecord`'s ``task``: the process's task in a multi-worker job."""

    SINCE = (1, 2)
    TYPE: Final = field("type", str, 'the task type ("worker")')
    INDEX: Final = field("index", int, "the task index")
    CLUSTER: Final = field("cluster", str, "the job's cluster id, the same in every process")


class WatchMap(FieldTable):
    """A `RunRecord`'s ``watch``: the run is a watched run (the watch tier)."""

    SINCE = (2, 6)
    ON_HIT: Final = field("on_hit", str, "what a hit does")
    MAX_REPLAYS: Final = field("max_replays", int, "replays at most")
    HOLD_UPDATE: Final = field(
        "hold_update", bool, "the update's writes held until checked", since=(2, 10)
    )


class ReplayOfMap(FieldTable):
    """A `RunRecord`'s ``replay_of``: the watched run and step the run replays."""

    SINCE = (2, 6)
    RUN: Final = field("run", str, "the watched run's id")
    STEP: Final = field("step", int, "the hit step")
    SITE: Final = field("site", int, "the watch site")
    CHECK: Final = field("check", str, "the check that failed")
    TENSOR: Final = field("tensor", str, "what failed it, in words")
    XLA: Final = field("xla", bool, "the replay ran compiled with XLA (absent: not)")
    VALUES: Final = field(
        "values", list, "a values replay: the ops whose values it keeps (absent: a whole replay)"
    )


class DeviceRecord(RecordKind):
    """A device the run placed tensors on, defined once with an id."""

    KIND = "device"
    ID: Final = field("id", int, "device id")
    NAME: Final = field("name", str, "its full name")


class NoticeRecord(RecordKind):
    """Something the user should know about the recording: what it misses, or a
    setting that shaped it (any number, at any time)."""

    KIND = "notice"
    SINCE = (1, 2)
    NOTICE_KIND: Final = field("kind", str, "what it is about")
    LEVEL: Final = field("level", str, '"warning" or "info"')
    MESSAGE: Final = field("message", str, "one line, for people")
    DETAILS: Final = field("details", dict, "facts for tools")
    TIME: Final = field("t", float, "Unix time written")


class EndRecord(RecordKind):
    """The run closed cleanly (its metadata stream's last record)."""

    KIND = "end"
    TIME: Final = field("time", float, "Unix time")
    NUM_EXECUTIONS: Final = field("num_executions", int, "executions recorded")
    NUM_TRACES: Final = field("num_traces", int, "graph traces recorded")


class WatchSiteRecord(RecordKind):
    """A watched optimizer and the columns of its steps' rows (once per optimizer)."""

    KIND = "watch_site"
    SINCE = (2, 6)
    ID: Final = field("id", int, "site id")
    OPTIMIZER: Final = field("optimizer", str, "the optimizer's name")
    COLUMNS: Final = field("columns", list, "the columns of its rows")
    RING: Final = field("ring", int, "steps the writer's ring holds")
    TIME: Final = field("t", float, "Unix time written")


class WatchStepsRecord(RecordKind):
    """Rows of one watch site's consecutive steps."""

    KIND = "watch_steps"
    SINCE = (2, 6)
    SITE: Final = field("site", int, "its watch site")
    FIRST: Final = field("first", int, "the step of the first row")
    ROWS: Final = field("rows", bytes, "float32 rows", column="<f4")
    COLUMNS: Final = field("columns", int, "the row width")
    LOST: Final = field("lost", int, "rows the ring dropped before first")
    TIME: Final = field("t", float, "Unix time written")


# A `watch_hit` record's `check`: what failed it: the loss, a gradient, the change the
# optimizer's update was to make to a variable (not written), or a variable found
# non-finite after an update wrote it (since 2.10 / 3.5; "update" meant that before).
CHECK_LOSS, CHECK_GRADIENT, CHECK_UPDATE = "loss", "gradient", "update"
CHECK_VARIABLE = "variable"
WATCH_CHECKS = (CHECK_LOSS, CHECK_GRADIENT, CHECK_UPDATE, CHECK_VARIABLE)
# Its `verdict`: what the replay of the hit step found (docs/instrument.md).
REPRODUCED, NOT_REPRODUCED, XLA_ONLY = "reproduced", "not_reproduced", "xla_only"
WATCH_VERDICTS = (REPRODUCED, NOT_REPRODUCED, XLA_ONLY)


class WatchHitRecord(RecordKind):
    """The first watched step whose check failed, and (once handled) its replay."""

    KIND = "watch_hit"
    SINCE = (2, 6)
    SITE: Final = field("site", int, "the watch site")
    STEP: Final = field("step", int, "the hit step")
    CHECK: Final = field("check", str, '"loss", "gradient", "update" or "variable"')  # WATCH_CHECKS
    TENSOR: Final = field("tensor", str, "what failed the check, in words")
    REPLICA: Final = field(
        "replica", int, "the first replica whose loss or gradient failed it (absent)"
    )
    REPLAY_RUN: Final = field("replay_run", str, "the replay's run id", nullable=True)
    XLA_REPLAY_RUN: Final = field(
        "xla_replay_run", str, "the replay compiled with XLA's run id", nullable=True
    )
    VERDICT: Final = field("verdict", str, "what the replay found", nullable=True)  # WATCH_VERDICTS
    SAVED_STATE: Final = field("saved_state", str, "the saved state's .npz", nullable=True)
    SAVED_BATCH: Final = field("saved_batch", str, "the saved batch's .npz", nullable=True)
    REPLAY_ERROR: Final = field("replay_error", str, "why the replay failed", nullable=True)
    TIME: Final = field("t", float, "Unix time written")
