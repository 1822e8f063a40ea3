"""The watch tier's records as values (format 2.6), checked as read (`WatchLog`): a
watched run's optimizers, its steps' rows (the loss, and per variable its gradient's
and its value's L2 norm), its hit, and a replay's link to the step it replays
(docs/format.md, "The watch tier").

`WatchLogBuilder` takes the records as the loader reads them, checks them (a hostile
count or size is damage, never an allocation) and hands out an immutable `WatchLog`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reader.contract import WatchHitRecord, WatchSiteRecord, WatchStepsRecord
from reader.contract.metadata import WATCH_CHECKS, WATCH_VERDICTS
from reader.errors import MalformedRecordError
from reader.limits import is_id, is_int

# A site's columns: the loss, then per variable two norms. More than this many
# variables in one optimizer is damage (a record claiming millions of columns).
MAX_COLUMNS = 1 << 16
# Rows kept per site; older ones are dropped (the trends need the run's shape, and a
# run of millions of steps must not hold millions of rows).
MAX_ROWS = 1 << 20


@dataclass(frozen=True)
class WatchSite:
    """A watched optimizer (one ``apply``): its name and the columns of its rows."""

    site_id: int
    optimizer: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class WatchHit:
    """The first step whose check failed, and what was done about it."""

    site_id: int
    step: int
    check: str
    """"loss", "gradient", "update" (a change the optimizer's update was to make, not
    written) or "variable" (a variable found non-finite after an update wrote it)."""
    tensor: str
    """What failed the check, in words ("the gradient of dense/kernel")."""
    replay_run: str | None = None
    """The replay's run id in the same logdir; None before it ran, or without one."""
    verdict: str | None = None
    """"reproduced", "not_reproduced" or "xla_only"; None without a replay."""
    saved_state: str | None = None
    saved_batch: str | None = None
    replay_error: str | None = None
    xla_replay_run: str | None = None
    """Of a step compiled with XLA: the replay compiled with XLA (`replay_run` is the
    one without, unless only this one reproduced)."""
    replica: int | None = None
    """Under a tf.distribute strategy: the replica whose value failed the check first
    (format 3.2); None otherwise."""

    @property
    def what(self) -> str:
        """What failed the check, and on which replica: "the loss on replica 1"."""
        return self.tensor + (f" on replica {self.replica}" if self.replica is not None else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "site": self.site_id,
            "hit_step": self.step,
            "check": self.check,
            "tensor": self.tensor,
            "replica": self.replica,
            "replay_run": self.replay_run,
            "verdict": self.verdict,
            "saved_state": self.saved_state,
            "saved_batch": self.saved_batch,
            "replay_error": self.replay_error,
            "xla_replay_run": self.xla_replay_run,
        }


@dataclass(frozen=True)
class WatchLog:
    """What a watched run recorded."""

    sites: dict[int, WatchSite]
    steps: dict[int, np.ndarray]
    """Per site: int64 step numbers of its rows, ascending."""
    rows: dict[int, np.ndarray]
    """Per site: float32 [steps, columns]."""
    hit: WatchHit | None
    lost_rows: int = 0
    """Rows the host did not read in time (a program faster than the ring)."""

    @property
    def num_steps(self) -> int:
        return max((int(s[-1]) + 1 for s in self.steps.values() if s.size), default=0)

    def column(self, site_id: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of one column of a site's rows."""
        site = self.sites[site_id]
        k = site.columns.index(name)
        return self.steps[site_id], self.rows[site_id][:, k]


@dataclass
class WatchLogBuilder:
    """Collects the watch records of one run as they are read."""

    sites: dict[int, WatchSite] = field(default_factory=dict)
    _chunks: dict[int, list[tuple[int, np.ndarray]]] = field(default_factory=dict)
    hit: WatchHit | None = None
    lost_rows: int = 0
    _cached: WatchLog | None = None

    def add_site(self, record: dict[str, Any]) -> None:
        ident, columns = record.get(WatchSiteRecord.ID), record.get(WatchSiteRecord.COLUMNS)
        if (
            not is_id(ident)
            or not isinstance(columns, list)
            or not 0 < len(columns) <= MAX_COLUMNS
            or not all(isinstance(c, str) for c in columns)
        ):
            raise MalformedRecordError("a watch_site without an id or with bad columns")
        self.sites[ident] = WatchSite(
            ident, str(record.get(WatchSiteRecord.OPTIMIZER) or "optimizer"), tuple(columns)
        )
        self._cached = None

    def add_steps(self, record: dict[str, Any]) -> None:
        site, first, data, width = (
            record.get(WatchStepsRecord.SITE),
            record.get(WatchStepsRecord.FIRST),
            record.get(WatchStepsRecord.ROWS),
            record.get(WatchStepsRecord.COLUMNS),
        )
        if (
            not is_id(site)
            or not is_id(first)
            or not isinstance(data, bytes)
            or not is_int(width)
            or not 0 < width <= MAX_COLUMNS
            or len(data) % (4 * width)
        ):
            raise MalformedRecordError("a watch_steps record with a bad site, first step or rows")
        known = self.sites.get(site)
        if known is None or len(known.columns) != width:
            raise MalformedRecordError(
                f"watch_steps of an unknown site {site}, or of another width than its columns"
            )
        rows = np.frombuffer(data, dtype=WatchStepsRecord.column(WatchStepsRecord.ROWS)).reshape(
            -1, width
        )
        self._chunks.setdefault(site, []).append((first, rows))
        lost = record.get(WatchStepsRecord.LOST)
        if is_int(lost) and lost > 0:
            self.lost_rows += lost
        self._cached = None

    def add_hit(self, record: dict[str, Any]) -> None:
        site, step, check = (
            record.get(WatchHitRecord.SITE),
            record.get(WatchHitRecord.STEP),
            record.get(WatchHitRecord.CHECK),
        )
        if not is_id(site) or not is_id(step) or check not in WATCH_CHECKS:
            raise MalformedRecordError("a watch_hit without a site, a step or a known check")
        verdict = record.get(WatchHitRecord.VERDICT)
        self.hit = WatchHit(
            site,
            step,
            check,
            _text(record.get(WatchHitRecord.TENSOR)) or "a tensor",
            replay_run=_text(record.get(WatchHitRecord.REPLAY_RUN)),
            verdict=verdict if verdict in WATCH_VERDICTS else None,
            saved_state=_text(record.get(WatchHitRecord.SAVED_STATE)),
            saved_batch=_text(record.get(WatchHitRecord.SAVED_BATCH)),
            replay_error=_text(record.get(WatchHitRecord.REPLAY_ERROR)),
            xla_replay_run=_text(record.get(WatchHitRecord.XLA_REPLAY_RUN)),
            replica=record[WatchHitRecord.REPLICA]
            if is_id(record.get(WatchHitRecord.REPLICA))
            else None,
        )
        self._cached = None

    def build(self) -> WatchLog:
        if self._cached is not None:
            return self._cached
        steps, rows = {}, {}
        for site, chunks in self._chunks.items():
            width = len(self.sites[site].columns)
            numbers = [np.arange(first, first + len(r), dtype=np.int64) for first, r in chunks]
            values = [r for _, r in chunks]
            all_steps = np.concatenate(numbers) if numbers else np.zeros(0, np.int64)
            all_rows = np.concatenate(values) if values else np.zeros((0, width), np.float32)
            order = np.argsort(all_steps, kind="stable")[-MAX_ROWS:]
            steps[site], rows[site] = all_steps[order], all_rows[order]
        self._cached = WatchLog(dict(self.sites), steps, rows, self.hit, self.lost_rows)
        return self._cached


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
