"""Read tfdbg-tui dumps without TensorFlow: the public API, `open_run`, `list_runs`,
`DumpReader`, the protocols `Run` and `AnalysedRun`, the values and errors.

    import reader

    for run in reader.list_runs("/tmp/logdir"):
        print(run.run_id, run.tensor_debug_mode)
    dump = reader.open_run("/tmp/logdir")        # the newest run
    print(dump.num_executions, dump.num_traces)
    cause = dump.root_cause()                     # the op and line of the first NaN
    dump.update()                                 # follow a live run

See docs/reader.md. This package imports neither TensorFlow, Textual nor Rich.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from reader.errors import (
    DamagedDumpError,
    DumpError,
    FormatVersionError,
    NoRunsError,
    NoRunsYetError,
    UnknownIdError,
)

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun
    from reader.analysis.dump_reader import DumpReader
    from reader.model import (
        ALERT_TYPES,
        Alert,
        AlertSummary,
        Execution,
        Frame,
        Graph,
        Op,
        RootCause,
        RunInfo,
        RunMetadata,
        SourceFile,
        Summary,
        TensorRef,
        Trace,
        UpdateReport,
    )
    from reader.run.run_dir import is_run_dir, list_runs, resolve_run_path
    from reader.run.run_protocol import Run

# Imported when first asked for: the errors alone (all a command's failure needs,
# `tfdbg-tui --version` included) come without numpy and the indexes.
_HOMES = {
    **dict.fromkeys(
        (
            "ALERT_TYPES",
            "Alert",
            "AlertSummary",
            "Execution",
            "Frame",
            "Graph",
            "Op",
            "RootCause",
            "RunInfo",
            "RunMetadata",
            "SourceFile",
            "Summary",
            "TensorRef",
            "Trace",
            "UpdateReport",
        ),
        "reader.model",
    ),
    "DumpReader": "reader.analysis.dump_reader",
    "Run": "reader.run.run_protocol",
    "AnalysedRun": "reader.analysis.analysed_run",
    **dict.fromkeys(("is_run_dir", "list_runs", "resolve_run_path"), "reader.run.run_dir"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'reader' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def open_run(logdir: str | os.PathLike[str], run_id: str | None = None) -> DumpReader:
    """Open one run of a logdir, indexed and ready to query.

    Args:
        logdir: A logdir, or a run directory itself.
        run_id: A run id (or a unique prefix of one); None opens the newest run.

    Raises:
        NoRunsError: No run in ``logdir``, or no run matches ``run_id``.
        FormatVersionError: The run was written by a newer major format version.
        DamagedDumpError: Not even the run's metadata is readable.
    """
    from reader.analysis.dump_reader import DumpReader
    from reader.run.run_dir import resolve_run_path

    return DumpReader(resolve_run_path(logdir, run_id))


__all__ = [
    "ALERT_TYPES",
    "Alert",
    "AlertSummary",
    "AnalysedRun",
    "DamagedDumpError",
    "DumpError",
    "DumpReader",
    "Execution",
    "FormatVersionError",
    "Frame",
    "Graph",
    "NoRunsError",
    "NoRunsYetError",
    "Op",
    "RootCause",
    "Run",
    "RunInfo",
    "RunMetadata",
    "SourceFile",
    "Summary",
    "TensorRef",
    "Trace",
    "UnknownIdError",
    "UpdateReport",
    "is_run_dir",
    "list_runs",
    "open_run",
    "resolve_run_path",
]
