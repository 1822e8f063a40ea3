"""`DumpReader`: one run of a dump, indexed, queried, analysed, and followed as it grows."""

from __future__ import annotations

import os

from reader.analysis.alerts import AlertBuilder, collect_alerts
from reader.analysis.root_cause import find_root_cause
from reader.analysis.steps import Steps
from reader.model import Alert, AlertSummary, RootCause
from reader.run.indexed_run import IndexedRun


class DumpReader(IndexedRun):
    """One run of a dump: the record queries of `IndexedRun` (which says how it is
    opened, followed and locked), and the analyses built on them: alerts, steps and
    the root cause, each cached until the dump changes."""

    def __init__(self, run_path: str | os.PathLike[str]) -> None:
        self._alerts_cache: tuple[tuple, AlertSummary] | None = None
        self._steps_cache: tuple[tuple, Steps] | None = None
        super().__init__(run_path)

    def alerts(self, limit_per_type: int = 1000) -> AlertSummary:
        """Every NaN/inf alert, counted per type, listed in true execution order.

        Args:
            limit_per_type: How many alerts of each type to list; totals stay exact.
        """
        with self._lock:
            key = self._state_key() + (limit_per_type,)
            if self._alerts_cache is None or self._alerts_cache[0] != key:
                self._alerts_cache = (key, collect_alerts(
                    self._execs, self._traces, AlertBuilder(self), limit_per_type))
            return self._alerts_cache[1]

    def first_alert(self) -> Alert | None:
        """The run's first alert in execution order, or None."""
        listed = self.alerts(limit_per_type=1).alerts
        return listed[0] if listed else None

    def steps(self) -> Steps:
        """The run's steps, alerts per step and gaps (`reader.analysis.steps`); cached."""
        with self._lock:
            key = self._state_key()
            if self._steps_cache is None or self._steps_cache[0] != key:
                self._steps_cache = (key, Steps(self, self.first_alert()))
            return self._steps_cache[1]

    def root_cause(self, alert: Alert | None = None) -> RootCause | None:
        """The op that made the first non-finite tensor (or ``alert``'s); None without alerts."""
        with self._lock:
            start = alert if alert is not None else self.first_alert()
            return None if start is None else find_root_cause(self, start)
