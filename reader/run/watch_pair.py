"""A watched run and the replay of its hit step, found from either: the pair `report`,
`report --json` and the TUI show together (docs/format.md, "The watch tier"); and the
values replay kept inside a replay's directory (`replay_values_path`).

The watched run's `watch_hit` record names its replay (``replay_run``); the replay's
`run` record names the watched run and step (``replay_of``). Both are runs of one
logdir.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

from reader import format as fmt
from reader import storage
from reader.errors import DumpError
from reader.model import RunInfo
from reader.run.indexed_run import IndexedRun
from reader.run.run_dir import list_runs, resolve_run_path
from reader.run.run_protocol import Run
from reader.watch_log import WatchLog


@dataclass(frozen=True)
class WatchPair:
    """A watched run, what it recorded, and its replay (None before one ran)."""

    watched_run: str
    log: WatchLog
    replay_run: str | None
    replay_path: str | None

    def as_dict(self) -> dict[str, Any]:
        """The report's ``watch`` object."""
        hit = self.log.hit
        return {
            "watched_run": self.watched_run,
            "steps": self.log.num_steps,
            "lost_rows": self.log.lost_rows,
            "optimizers": [site.optimizer for site in self.log.sites.values()],
            **(hit.as_dict() if hit is not None else {"hit_step": None}),
            "sinks": [hit.tensor] if hit is not None else [],
            "replay_run": self.replay_run,
        }


def watch_pair(run: Run) -> WatchPair | None:
    """The pair ``run`` belongs to: itself watched, or the replay of a watched run;
    None for any other run (or when the other half cannot be read)."""
    log = run.watch_log()
    meta = run.metadata
    logdir = _logdir_of(run.path)
    if log is not None:
        hit = log.hit
        replay = hit.replay_run if hit is not None else None
        return WatchPair(meta.run_id, log, replay, _path_of(logdir, replay))
    link = meta.replay_of
    if link is None:
        return None
    watched_path = _path_of(logdir, link.run_id)
    if watched_path is None:
        return None
    try:
        with IndexedRun(watched_path) as watched:
            watched_log = watched.watch_log()
    except (DumpError, OSError):
        return None
    if watched_log is None:
        return None
    named = watched_log.hit.replay_run if watched_log.hit is not None else None
    if named is None or named == meta.run_id:
        return WatchPair(link.run_id, watched_log, meta.run_id, run.path)
    # Another replay of the same step is the one named (a compiled step's xla_only).
    return WatchPair(link.run_id, watched_log, named, _path_of(_logdir_of(run.path), named))


def replay_values_path(run: Run) -> str | None:
    """The values replay kept beside the replay ``run`` (the newest run of its
    `reader.format.REPLAY_VALUES_DIR` directory: FULL_TENSOR of its root cause's op and
    the ops of its inputs), or None: ``run`` is no replay, or none was kept."""
    if run.metadata.replay_of is None or run.metadata.replay_of.values is not None:
        return None
    path = run.path.rstrip("/")
    try:
        runs = list_runs(storage.store_for(path).join(path, fmt.REPLAY_VALUES_DIR))
    except (DumpError, OSError):
        return None
    return runs[-1].path if runs else None


def _logdir_of(run_path: str) -> str:
    path = run_path.rstrip("/")
    return posixpath.dirname(path) if storage.is_url(path) else os.path.dirname(path)


def _path_of(logdir: str, run_id: str | None) -> str | None:
    if run_id is None:
        return None
    try:
        return resolve_run_path(logdir, run_id)
    except DumpError:
        return None


def other_of_pair(runs: list[RunInfo], run_id: str | None) -> tuple[str | None, str]:
    """The other run of ``run_id``'s pair among ``runs`` (a logdir's listing): a
    watched run's newest replay, or a replay's watched run; else None and why."""
    current = next((run for run in runs if run.run_id == run_id), None)
    if current is None:
        return None, "the run shown is not in the logdir's listing"
    if current.replay_of is not None:
        watched = current.replay_of.run_id
        if any(run.run_id == watched for run in runs):
            return watched, ""
        return None, f"the watched run {watched} of this replay is not in the logdir"
    if current.watched:
        replays = [
            run for run in runs if run.replay_of is not None and run.replay_of.run_id == run_id
        ]
        if replays:
            return replays[-1].run_id, ""
        return None, "this watched run has no replay (no step went non-finite, or none replayed)"
    return None, "this run is neither a watched run nor the replay of one (w)"


def newest_first_in_pairs(runs: list[RunInfo]) -> list[RunInfo]:
    """``runs`` (oldest first, as listed) newest first, each replay right below the
    watched run it replays (a pair stays together when other runs started between)."""
    newest_first = list(reversed(runs))
    watched = {run.run_id for run in runs if run.watched}
    replays: dict[str, list[RunInfo]] = {}
    for run in newest_first:
        if run.replay_of is not None and run.replay_of.run_id in watched:
            replays.setdefault(run.replay_of.run_id, []).append(run)
    ordered: list[RunInfo] = []
    for run in newest_first:
        if run.replay_of is not None and run.replay_of.run_id in watched:
            continue
        ordered.append(run)
        ordered.extend(replays.get(run.run_id, []))
    return ordered
