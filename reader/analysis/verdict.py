"""The verdict of a run whose non-finite values were all contained: healthy.

A run with alerts but no harmful one (`reader.analysis.harm`) gets a diagnosis of its
own instead of a root cause: ``expected_loss_scaling`` when a dynamic loss scale
skipped steps, ``healthy`` otherwise, worded in one line ("no harmful non-finite
values; 9 steps overflowed under the loss scale and were skipped, as designed; 20
deliberate -inf"). The report prints it and the TUI opens on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reader.analysis.diagnosis import Diagnosis
from reader.analysis.harm import HarmVerdict
from reader.model import AlertSummary

if TYPE_CHECKING:
    from reader.analysis.dump_reader import DumpReader

VERDICT_PATTERNS = ("healthy", "expected_loss_scaling")


def healthy_verdict(reader: DumpReader) -> Diagnosis | None:
    """The verdict of a run whose every alert is contained; None when the run has no
    alert, or a harmful one."""
    summary = reader.alerts()
    if not summary.total or reader.first_alert() is not None:
        return None
    harm = reader.harm()
    pattern = "expected_loss_scaling" if harm.skipped_step_numbers else "healthy"
    evidence = [f"{reason}: {n:,} alert{'s' if n != 1 else ''}"
                for reason, n in summary.contained.items() if n]
    if harm.skipped_step_numbers:
        evidence.append("steps skipped by the loss scaler: "
                        + _ranges(harm.skipped_step_numbers))
    if harm.loss_scale_evidence:
        evidence.append(harm.loss_scale_evidence)
    evidence.extend(_examples(reader, harm))
    return Diagnosis(pattern, contained_line(summary, harm)[0].upper()
                     + contained_line(summary, harm)[1:] + ".",
                     "nothing to fix: these values did no harm. Alerts lists them "
                     "dimmed, each with its reason", tuple(evidence))


def contained_line(summary: AlertSummary, harm: HarmVerdict) -> str:
    """"no harmful non-finite values; 9 steps overflowed under the loss scale and were
    skipped, as designed; 20 deliberate -inf"."""
    parts = ["no harmful non-finite values" if summary.harmful == 0
             else f"{summary.harmful:,} harmful non-finite values"]
    steps = len(harm.skipped_step_numbers)
    if steps:
        parts.append(f"{steps} step{'s' if steps != 1 else ''} overflowed under the loss "
                     f"scale and {'were' if steps != 1 else 'was'} skipped, as designed")
    deliberate = summary.contained.get("deliberate", 0)
    if deliberate:
        parts.append(f"{deliberate:,} deliberate {_deliberate_kind(summary)}")
    discarded = summary.contained.get("discarded", 0)
    if discarded:
        parts.append(f"{discarded:,} non-finite value{'s' if discarded != 1 else ''} "
                     f"a select discarded")
    return "; ".join(parts)


def _deliberate_kind(summary: AlertSummary) -> str:
    kinds = {a.alert_type for a in summary.alerts if a.contained == "deliberate"}
    return kinds.pop() if len(kinds) == 1 and "inf/NaN" not in kinds else "infinities"


def _examples(reader: DumpReader, harm: HarmVerdict) -> list[str]:
    """One line per contained tensor (at most a few): what it is and why."""
    lines: list[str] = []
    for group, containment in enumerate(harm.group_containment):
        if containment is None or len(lines) >= 5:
            continue
        trace = reader.trace(int(harm.group_traces[group]))
        name = reader.op(trace.op_id).name if trace.op_id is not None else "?"
        lines.append(f"'{name}:{trace.slot}' {containment.reason}: {containment.explanation}")
    return lines


def _ranges(numbers: tuple[int, ...]) -> str:
    """"0-8, 12" from ascending numbers."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)
