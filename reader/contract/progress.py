"""The progress file's record (`ProgressRecord`, with its `ProgressAlertMap`): what a
multi-worker job's ranking reads of a run without indexing it, its first non-finite
value and how far it has run, and what listing a logdir says of it (its `run` record,
whether it ended), in one small file (docs/format.md, "The progress file")."""

from __future__ import annotations

from typing import Final

from reader.contract.fields import FieldTable, RecordKind, field


class ProgressRecord(RecordKind):
    """A job's run as its writer last saw it: the one record of its progress file,
    replaced whole at flushes."""

    KIND = "progress"
    SINCE = (2, 7)
    RUN: Final = field("run", dict, "the run's `run` record (without its `k`)")
    CALLS: Final = field("calls", list, "[function, calls] in the order first called")
    EXECUTIONS: Final = field("executions", int, "executions recorded")
    TRACES: Final = field("traces", int, "graph traces recorded")
    ALERT: Final = field(
        "alert", dict, "the first alert (`ProgressAlertMap`); absent: not looked for", nullable=True
    )
    ENDED: Final = field("ended", bool, "the run closed cleanly (its `end` is written)")
    STOPPED: Final = field("stopped", bool, "recording stopped on a write error")
    TIME: Final = field("t", float, "Unix time written")


class ProgressAlertMap(FieldTable):
    """A `ProgressRecord`'s ``alert``: the run's first record holding NaN or infinity."""

    SINCE = (2, 7)
    STEP: Final = field("x", int, "the execution index of the step it ran in")
    ALERT_KIND: Final = field("kind", str, '"graph" or "eager"')
    INDEX: Final = field("i", int, "its trace or execution index")
    SLOT: Final = field("slot", int, "the output slot")
    OP_TYPE: Final = field("op", str, "the op type (or function name)")
    OP_NAME: Final = field("name", str, "the graph op's name", nullable=True)
    RECEIVED: Final = field("received", bool, "the op is one of `RECEIVING_OPS`")
    DEVICE: Final = field("device", str, "its device", nullable=True)
    TIME: Final = field("t", float, "the wall time of execution x", nullable=True)
    CALLS: Final = field(
        "calls", list, "[function, ordinal] of the latest calls at or before x", nullable=True
    )
    FILE: Final = field("file", str, "its innermost user frame's file", nullable=True)
    LINE: Final = field("line", int, "that frame's line", nullable=True)
    FUNCTION: Final = field("func", str, "that frame's function", nullable=True)
