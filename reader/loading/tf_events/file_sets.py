"""The files of TensorFlow's own dumps: one file set per host, named
``tfdbg_events.<start time>.<host name>.<stream>``.

One file set is one run in our model (`reader.run.run_dir` lists them): a run's path is
the file set's prefix, ``LOGDIR/tfdbg_events.<start time>.<host name>``, and its run
id that prefix's base name.
"""

from __future__ import annotations

import os

from reader import format as fmt

FILE_PREFIX = "tfdbg_events."
# Our stream names to the suffixes of TensorFlow's files (debug_events_writer.cc).
SUFFIXES = {
    fmt.STREAM_METADATA: ".metadata",
    fmt.STREAM_SOURCE_FILES: ".source_files",
    fmt.STREAM_STACKS: ".stack_frames",
    fmt.STREAM_GRAPHS: ".graphs",
    fmt.STREAM_EXECUTIONS: ".execution",
    fmt.STREAM_GRAPH_TRACES: ".graph_execution_traces",
}
METADATA_SUFFIX = SUFFIXES[fmt.STREAM_METADATA]


def stream_path(prefix: str, stream: str) -> str:
    """The file of ``stream`` in the file set ``prefix``."""
    return prefix + SUFFIXES[stream]


def is_file_set(path: str) -> bool:
    """True when ``path`` is the prefix of a file set: its metadata file exists."""
    return os.path.basename(path).startswith(FILE_PREFIX) and os.path.isfile(path + METADATA_SUFFIX)


def file_sets_in(directory: str) -> list[str]:
    """The prefixes of the file sets in ``directory``, sorted; [] when unreadable."""
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries]
    except OSError:
        return []
    return sorted(
        os.path.join(directory, name[: -len(METADATA_SUFFIX)])
        for name in names
        if name.startswith(FILE_PREFIX)
        and name.endswith(METADATA_SUFFIX)
        and len(name) > len(FILE_PREFIX) + len(METADATA_SUFFIX)
    )


def start_and_host(prefix: str) -> tuple[int | None, str | None]:
    """The start time (whole seconds since the epoch) and host name a prefix names;
    Nones for a name that does not follow TensorFlow's pattern."""
    rest = os.path.basename(prefix)[len(FILE_PREFIX) :]
    stamp, _, host = rest.partition(".")
    return (int(stamp) if stamp.isdigit() else None), (host or None)


def is_tf_run(path: str) -> bool:
    """True when ``path`` names one file set of TensorFlow's dumper."""
    return not os.path.isdir(path) and is_file_set(path)
