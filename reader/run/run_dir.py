"""Find the runs in a logdir: ours (one directory of stream segment files each) and
TensorFlow's file sets."""

from __future__ import annotations

import math
import os
import threading
import time

import msgpack

from reader import format as fmt
from reader import storage
from reader.byte_sources import Part
from reader.contract import KIND_KEY, HeaderRecord, NoticeRecord, RunRecord
from reader.errors import NoRunsError, NoRunsYetError
from reader.loading.tf_events import file_sets
from reader.model import DUMPER_TENSORFLOW, RunInfo
from reader.progress import RunProgress, read_progresses
from reader.records import replay_of, task_of
from reader.run import liveness

# A metadata segment holds a header, the run record, devices and the end record: a few
# kilobytes. The cap only guards against a foreign file that borrowed the name.
_METADATA_MAX_BYTES = 4 << 20


def is_run_dir(path: str) -> bool:
    """True when ``path`` is a directory (or a bucket prefix) holding a metadata
    segment (``metadata.*.tfdbg``, or its parts)."""
    try:
        return storage.has_metadata([e.name for e in storage.store_for(path).list_dir(path)])
    except OSError:
        return False


def list_runs(logdir: str | os.PathLike[str], *, fresh_within: float = 0.0) -> list[RunInfo]:
    """List the runs in a logdir, oldest first.

    A run directory itself is accepted too and lists as its one run. Runs whose
    metadata cannot be read are still listed, with None for what is unknown. Each file
    set of TensorFlow's own dumper in ``logdir`` (one per host) is a run too, its path
    the file set's prefix (`reader.loading.tf_events.file_sets`).

    Args:
        logdir: A directory holding run directories (or one run directory), or the
            prefix of one file set of TensorFlow's.
        fresh_within: A bucket's listing made at most this many seconds ago may
            serve (listing a bucket of hundreds of runs takes a request each); a
            local logdir is always listed now.

    Returns:
        One `RunInfo` per run, oldest first: by the UTC start time its run id begins
        with, then, within one second, by the start time it records.

    Raises:
        NoRunsYetError: No run yet where a program may still write one: ``logdir``
            is an empty directory, is missing but its parent exists, or is a bucket
            prefix nothing was written under.
        NoRunsError: ``logdir`` is not a directory, is unreadable, its parent is
            missing, or holds TensorFlow's dumps in directories inside it.
    """
    path = os.fspath(logdir)
    if storage.is_url(path):
        return _listed_store_runs(path, fresh_within)
    path = storage.local_path(path)
    if file_sets.is_file_set(path) and not os.path.isdir(path):
        return [_tf_run_info(os.path.abspath(path))]
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise NoRunsError(f"{path}: not a directory")
        if os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise NoRunsYetError(f"{path}: no such directory")
        raise NoRunsError(f"{path}: no such directory (nor its parent)")
    if is_run_dir(path):
        return [_run_info(os.path.abspath(path))]
    try:
        with os.scandir(path) as entries:
            candidates = sorted(e.path for e in entries if e.is_dir(follow_symlinks=True))
    except OSError as error:
        raise NoRunsError(f"{path}: cannot list directory ({error.strerror})") from None
    runs = [_run_info(c) for c in candidates if is_run_dir(c)]
    runs += [_tf_run_info(os.path.abspath(prefix)) for prefix in file_sets.file_sets_in(path)]
    return _sorted_runs(path, runs, candidates)


# A bucket's listings of runs, by URL: when each was made (monotonic) and what it found.
_STORE_LISTINGS: dict[str, tuple[float, list[RunInfo]]] = {}
_STORE_LISTINGS_LOCK = threading.Lock()
# How long a bucket's listing of runs is kept for a caller that takes one made a moment
# ago (`list_runs`'s ``fresh_within``).
LISTING_KEPT_S = 10.0


def _listed_store_runs(url: str, fresh_within: float) -> list[RunInfo]:
    """`_list_store_runs`, or its result of at most ``fresh_within`` seconds ago."""
    try:
        url = storage.store_for(url).normalize(url)
    except OSError:
        pass  # fsspec is missing: `_list_store_runs` says so
    now = time.monotonic()
    with _STORE_LISTINGS_LOCK:
        made, runs = _STORE_LISTINGS.get(url, (-math.inf, []))
    if now - made <= fresh_within:
        return list(runs)
    runs = _list_store_runs(url)
    with _STORE_LISTINGS_LOCK:
        for key in [k for k, (t, _) in _STORE_LISTINGS.items() if now - t > LISTING_KEPT_S]:
            del _STORE_LISTINGS[key]
        _STORE_LISTINGS[url] = (now, runs)
    return list(runs)


def _list_store_runs(url: str) -> list[RunInfo]:
    """`list_runs` of a logdir in a bucket (a run's prefix lists as its one run)."""
    try:
        store = storage.store_for(url)
        url = store.normalize(url)
        entries = store.list_dir(url)
    except FileNotFoundError:
        entries = []
    except OSError as error:
        raise NoRunsError(f"{url}: cannot list ({error.strerror or error})") from None
    if storage.has_metadata([e.name for e in entries]):
        return [_run_info(url, store)]
    candidates = sorted(e.path for e in entries if e.is_dir)
    if not candidates and not entries:
        _check_bucket(url, store)
        raise NoRunsYetError(f"{url}: nothing under this prefix (yet)")
    runs = []
    # A job's run is listed from its progress file, fetched with the others at once;
    # any other prefix is listed, and its metadata read (each a request).
    for candidate, found in zip(candidates, read_progresses(candidates, store)):
        if found is not None:
            runs.append(progress_run_info(candidate, found))
            continue
        try:
            listed = store.list_dir(candidate)
        except OSError:
            continue
        if storage.has_metadata([e.name for e in listed]):
            runs.append(_run_info(candidate, store, storage.segments_in(listed)))
    return _sorted_runs(url, runs, [])


def progress_run_info(run_path: str, progress: RunProgress) -> RunInfo:
    """A job's run as its progress file lists it: its `run` record, whether it ended or
    stopped recording (`reader.progress`)."""
    run = progress.run
    version = run.get(RunRecord.FORMAT_VERSION)
    task, cluster = task_of(run)
    return RunInfo(
        run_id=str(run.get(RunRecord.RUN)),
        path=run_path,
        host=_typed(run.get(RunRecord.HOST), str),
        pid=_typed(run.get(RunRecord.PID), int),
        start_time=_typed(run.get(RunRecord.START_TIME), float),
        tensor_debug_mode=_typed(run.get(RunRecord.TENSOR_DEBUG_MODE), str),
        finished=progress.ended,
        format_version=_version(version),
        task=task,
        cluster=cluster,
        stopped=progress.stopped,
        watched=isinstance(run.get(RunRecord.WATCH), dict),
        replay_of=replay_of(run),
        progress=progress,
    )


def _check_bucket(url: str, store: storage.Store) -> None:
    """Raise `NoRunsError` when the bucket of ``url`` does not exist (a prefix exists
    only once something is written under it; a bucket must exist before)."""
    scheme, _, key = url.partition("://")
    bucket = f"{scheme}://{key.split('/')[0]}"
    try:
        missing = not store.exists(bucket)
    except OSError:
        return  # cannot tell: as a missing prefix
    if missing:
        raise NoRunsError(f"{url}: no such bucket ({bucket})")


def _sorted_runs(path: str, runs: list[RunInfo], candidates: list[str]) -> list[RunInfo]:
    # Run ids start with the UTC start time to the second; within one second (runs a
    # program starts one after another) the start time orders them.
    runs.sort(key=lambda r: (_start_key(r), r.start_time or 0.0, r.run_id))
    if not runs:
        # TensorFlow's dumps sit in their dump root, not in directories inside it.
        inside = [os.path.basename(c) for c in candidates if file_sets.file_sets_in(c)]
        if inside:
            raise NoRunsError(
                f"{path}: no tfdbg-tui dump and no TensorFlow dump in this "
                f"directory (TensorFlow's dumps are in "
                f"{', '.join(inside[:3])}: open one)"
            )
        raise NoRunsYetError(f"{path}: no tfdbg-tui dump and no TensorFlow dump in this directory")
    return runs


def _start_key(run: RunInfo) -> str:
    """The UTC start time to the second, as our run ids begin with it."""
    if run.dumper == DUMPER_TENSORFLOW:
        return time.strftime("%Y%m%dT%H%M%S", time.gmtime(run.start_time or 0))
    return run.run_id[:_ID_TIME_LENGTH]


# Characters of a run id that give its start time: "20261123T143021".
_ID_TIME_LENGTH = 15


def resolve_run_path(logdir: str | os.PathLike[str], run_id: str | None = None) -> str:
    """The directory of one run: the newest by default, else ``run_id``.

    ``run_id`` matches a run id exactly, or else a unique prefix of one.

    Raises:
        NoRunsYetError: No run in ``logdir`` yet (`list_runs`), or none matches
            ``run_id`` yet.
        NoRunsError: No run in ``logdir`` (`list_runs`), or several match ``run_id``.
    """
    runs = list_runs(logdir)
    if run_id is None:
        return runs[-1].path
    exact = [r for r in runs if r.run_id == run_id]
    if exact:
        return exact[0].path
    prefixed = [r for r in runs if r.run_id.startswith(run_id)]
    if len(prefixed) == 1:
        return prefixed[0].path
    if prefixed:
        raise NoRunsError(f"run {run_id!r} is ambiguous: {len(prefixed)} runs start with it")
    known = ", ".join(r.run_id for r in runs[-3:])
    raise NoRunsYetError(f"no run {run_id!r} in {os.fspath(logdir)} (newest: {known})")


def _run_info(
    run_path: str,
    store: storage.Store = storage.LOCAL,
    listing: dict[str, dict[int, list[Part]]] | None = None,
) -> RunInfo:
    """Peek at a run's metadata segment 0: its header and `run` and `end` records
    (in a bucket, from ``listing``, the run's segments, when it was listed already)."""
    run_id = store.basename(run_path)
    header: dict = {}
    run: dict = {}
    finished = False
    notice_kinds: set[str] = set()
    # Looked at before the metadata is read (`liveness.recording_stopped`).
    reserve_gone = not liveness.reserve_exists(run_path, store)
    data = _metadata_bytes(run_path, store, listing)
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(data)
    try:
        for record in unpacker:
            if not isinstance(record, dict):
                break
            kind = record.get(KIND_KEY)
            if kind == fmt.KIND_HEADER and not header:
                header = record
            elif kind == fmt.KIND_RUN:
                run = record
            elif kind == fmt.KIND_END:
                finished = True
            elif kind == fmt.KIND_NOTICE and isinstance(record.get(NoticeRecord.NOTICE_KIND), str):
                notice_kinds.add(record[NoticeRecord.NOTICE_KIND])
    except (ValueError, TypeError, msgpack.UnpackException):
        pass  # a damaged metadata file: report what was read before the damage
    format_version = _version(header.get(HeaderRecord.VERSION))
    task, cluster = task_of(run)
    return RunInfo(
        run_id=run_id,
        path=run_path,
        host=_typed(run.get(RunRecord.HOST), str),
        pid=_typed(run.get(RunRecord.PID), int),
        start_time=_typed(run.get(RunRecord.START_TIME), float),
        tensor_debug_mode=_typed(run.get(RunRecord.TENSOR_DEBUG_MODE), str),
        finished=finished,
        format_version=format_version,
        task=task,
        cluster=cluster,
        stopped=liveness.recording_stopped(
            finished, notice_kinds, reserve_gone and run.get(RunRecord.SPACE_RESERVE) is True
        ),
        watched=isinstance(run.get(RunRecord.WATCH), dict),
        replay_of=replay_of(run),
    )


def _metadata_bytes(
    run_path: str, store: storage.Store, listing: dict[str, dict[int, list[Part]]] | None = None
) -> bytes:
    """The first `_METADATA_MAX_BYTES` of the run's metadata segment 0 (b"" when it
    cannot be read)."""
    if not store.remote:
        try:
            with open(
                store.join(run_path, fmt.segment_filename(fmt.STREAM_METADATA, 0)), "rb"
            ) as f:
                return f.read(_METADATA_MAX_BYTES)
        except OSError:
            return b""
    listing = listing or storage.list_segments(run_path, store)
    parts = listing[fmt.STREAM_METADATA].get(0) if listing else None
    if not parts:
        return b""
    try:
        source = store.open_parts(parts)
        return source.pread(min(source.size(), _METADATA_MAX_BYTES), 0)
    except OSError:
        return b""


def _version(version) -> tuple[int, int] | None:
    """``[major, minor]`` as a tuple; None when it is not two ints."""
    if (
        isinstance(version, list)
        and len(version) >= 2
        and isinstance(version[0], int)
        and isinstance(version[1], int)
    ):
        return version[0], version[1]
    return None


def _typed(value, kind):
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def _tf_run_info(prefix: str) -> RunInfo:
    # Imported when needed: the protobuf runtime costs every start ~40 ms otherwise.
    from reader.loading.tf_events.loader import tf_run_info

    return tf_run_info(prefix)
