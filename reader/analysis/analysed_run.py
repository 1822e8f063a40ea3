"""`AnalysedRun`: a `Run` with its cached analyses, named (`reader.AnalysedRun`): what
the diagnosis, the comparison, the jobs and the TUI take.

The diagnosis, the comparison of two runs, the jobs of several workers and the TUI
ask a run for its alerts, harm verdict, steps, root cause, places and trends: they take
an `AnalysedRun`. `reader.analysis.dump_reader.DumpReader` meets it (mypy checks that
it does) and documents each analysis; the record queries are `Run`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from reader.run.run_protocol import Run

if TYPE_CHECKING:
    from reader.analysis.hunt.harm import HarmVerdict
    from reader.analysis.hunt.model_place import Place
    from reader.analysis.hunt.steps import Steps
    from reader.analysis.trends.trends import Trends
    from reader.analysis.trends.watch_rules import WatchReport
    from reader.model import Alert, AlertSummary, RootCause


class AnalysedRun(Run, Protocol):
    """A run's record queries (`Run`) and its analyses, each cached until the run
    changes (documented on `reader.analysis.dump_reader.DumpReader`)."""

    def alerts(self, limit_per_type: int = 1000) -> AlertSummary: ...
    def first_alert(self) -> Alert | None: ...
    def harm(self) -> HarmVerdict: ...
    def place(self, alert: Alert) -> Place: ...
    def steps(self) -> Steps: ...
    def root_cause(self, alert: Alert | None = None) -> RootCause | None: ...
    def trends(self) -> Trends: ...
    def watch(self, config: dict[str, dict[str, float]] | None = None) -> WatchReport: ...
