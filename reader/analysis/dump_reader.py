"""`DumpReader`: one run of a dump, indexed, queried, analysed, and followed as it
grows. It adds to `IndexedRun` the cached analyses (`alerts`, `harm`, `steps`,
`root_cause`, places, `trends`) and the watch rules over them (`watch`); it meets
`AnalysedRun`, and reads its run through the public queries only."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from reader.analysis.hunt.alerts import AlertBuilder, collect_alerts, first_harmful
from reader.analysis.hunt.harm import HarmVerdict, classify
from reader.analysis.hunt.model_place import Place, PlaceFinder
from reader.analysis.hunt.root_cause import find_root_cause
from reader.analysis.hunt.steps import Steps
from reader.analysis.trends import watch_rules
from reader.analysis.trends.trends import Trends, compute_trends
from reader.analysis.trends.watched_trends import trends_of_watch
from reader.model import Alert, AlertSummary, RootCause
from reader.run.indexed_run import IndexedRun

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun


class DumpReader(IndexedRun):
    """One run of a dump: the record queries of `IndexedRun` (which says how it is
    opened, followed and locked), and the analyses built on them: alerts, steps and
    the root cause, each cached until the dump changes. The first alert, the steps'
    first non-finite step and the root cause are the first *harmful* value's
    (`harm`). It asks its run through the public queries only (a `Run`), holding
    `query_lock` while an analysis reads, so that each sees one state of the run."""

    def __init__(self, run_path: str | os.PathLike[str]) -> None:
        self._alerts_cache: tuple[tuple, AlertSummary] | None = None
        self._steps_cache: tuple[tuple, Steps] | None = None
        self._harm_cache: tuple[tuple, HarmVerdict, Alert | None] | None = None
        self._places: PlaceFinder | None = None
        self._trends_cache: tuple[tuple, Trends] | None = None
        super().__init__(run_path)

    def place(self, alert: Alert) -> Place:
        """Where in the model an alert's tensor was made: phase, Keras layer, library
        frame (`reader.analysis.hunt.model_place`)."""
        with self.query_lock:
            if self._places is None:
                self._places = PlaceFinder(self)
            return self._places.of_alert(alert)

    def harm(self) -> HarmVerdict:
        """Every alert, contained (with its reason) or harmful (`reader.analysis.hunt.harm`)."""
        return self._harm()[0]

    def _harm(self) -> tuple[HarmVerdict, Alert | None]:
        with self.query_lock:
            key = self.state_key()
            if self._harm_cache is None or self._harm_cache[0] != key:
                index, step, counts = self.trace_alert_rows()
                eager_index, eager_slot, _ = self.execution_alert_rows()
                verdict = classify(
                    self,
                    index,
                    step,
                    counts,
                    self.trace_alert_points(),
                    eager_index,
                    eager_slot,
                    lambda: Steps(self, None),
                )
                codes = (verdict.eager_codes, verdict.graph_codes)
                first = first_harmful(self, AlertBuilder(self), codes)
                self._harm_cache = (key, verdict, first)
            return self._harm_cache[1], self._harm_cache[2]

    def alerts(self, limit_per_type: int = 1000) -> AlertSummary:
        """Every NaN/inf alert, counted per type, listed in true execution order.

        Args:
            limit_per_type: How many alerts of each type to list; totals stay exact.
        """
        with self.query_lock:
            key = self.state_key() + (limit_per_type,)
            if self._alerts_cache is None or self._alerts_cache[0] != key:
                harm = self.harm()
                self._alerts_cache = (
                    key,
                    collect_alerts(
                        self,
                        AlertBuilder(self),
                        limit_per_type,
                        (harm.eager_codes, harm.graph_codes),
                    ),
                )
            return self._alerts_cache[1]

    def first_alert(self) -> Alert | None:
        """The run's first harmful alert in execution order, or None (every alert, if
        any, is contained)."""
        return self._harm()[1]

    def steps(self) -> Steps:
        """The run's steps, alerts per step and gaps (`reader.analysis.hunt.steps`); cached."""
        with self.query_lock:
            key = self.state_key()
            if self._steps_cache is None or self._steps_cache[0] != key:
                self._steps_cache = (key, Steps(self, self.first_alert()))
            return self._steps_cache[1]

    def trends(self) -> Trends:
        """Per layer and step: gradient, update, weight norms and activation magnitudes
        (`reader.analysis.trends.trends`; a watched run's from its step rows,
        `reader.analysis.trends.watched_trends`); cached until the dump changes."""
        with self.query_lock:
            key = self.state_key()
            if self._trends_cache is None or self._trends_cache[0] != key:
                log = self.watch_log() if self.metadata.watched else None
                if log is not None:
                    trends = trends_of_watch(log, self.metadata.tensor_debug_mode)
                else:
                    steps = self.steps()
                    trends = compute_trends(self, steps.of_executions, steps.has_steps)
                self._trends_cache = (key, trends)
            return self._trends_cache[1]

    def watch(self, config: dict[str, dict[str, float]] | None = None) -> watch_rules.WatchReport:
        """The watch rules' hits over the trends, the first anomaly and its lead on the
        first harmful value (`reader.analysis.trends.watch_rules`; ``config``: each rule's
        parameters, from `parse_rule_specs`; None: the defaults). Not cached."""
        log = self.watch_log() if self.metadata.watched else None
        hit_step = log.hit.step if log is not None and log.hit is not None else None
        return watch_rules.watch(
            self,
            self.trends(),
            self.harm(),
            self.steps(),
            self.first_alert(),
            config,
            harmful_step=hit_step,
        )

    def root_cause(self, alert: Alert | None = None) -> RootCause | None:
        """The op that made the first harmful tensor (or ``alert``'s), walked back
        through harmful inputs; None without harmful alerts."""
        with self.query_lock:
            start = alert if alert is not None else self.first_alert()
            if start is None:
                return None
            return find_root_cause(self, start, contained=self.harm().is_contained_trace)


if TYPE_CHECKING:

    def _is_an_analysed_run(run: DumpReader) -> AnalysedRun:  # mypy checks it meets it
        return run
