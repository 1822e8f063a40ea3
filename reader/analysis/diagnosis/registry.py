"""The registry of diagnosis patterns: every rule in the order it is tried, and the
outcomes no check finds. One place: the diagnosis runs `RULES`, the TUI's diagnosis
line takes its labels from `label_of`, the docs and the tests check against it.

The order is explicit: the patterns that know training first (a divergence is also an
overflow, a collapse of the loss scale also a non-finite gradient: the more telling
one wins), then the op's own; within each family, the order of its `RULES`. Adding a
pattern is adding one `Rule` entry to its family (docs/architecture.md).
"""

from __future__ import annotations

from reader.analysis.diagnosis import op_patterns, training_patterns
from reader.analysis.diagnosis.rule import Rule

RULES: tuple[Rule, ...] = (*training_patterns.RULES, *op_patterns.RULES)

# What no rule found: the op's inputs and output fit no known pattern.
UNKNOWN = Rule(
    "unknown",
    "unexplained",
    fix="look at the op's inputs in Graph Structure; tf.debugging.check_numerics right "
    "after the expression narrows it down",
)
# A selected alert whose value the harm analysis found contained (`reader.analysis.hunt.harm`).
CONTAINED = Rule(
    "contained",
    "contained",
    fix="nothing to fix here: this value did no harm (the diagnosis line shows the "
    "run's verdict on opening)",
)
# The verdicts of a run whose every alert was contained (`reader.analysis.diagnosis.verdict`).
_NO_HARM_FIX = (
    "nothing to fix: these values did no harm. Alerts lists them dimmed, each with its reason"
)
HEALTHY = Rule("healthy", "healthy", fix=_NO_HARM_FIX)
EXPECTED_LOSS_SCALING = Rule("expected_loss_scaling", "healthy: loss scaling", fix=_NO_HARM_FIX)
VERDICTS = (HEALTHY, EXPECTED_LOSS_SCALING)
# Every outcome that is not a rule's finding.
OUTCOMES = (UNKNOWN, CONTAINED, *VERDICTS)

# The patterns a diagnosis of an alert can name (`Diagnosis.pattern`), rules first.
PATTERNS = tuple(rule.pattern for rule in (*RULES, UNKNOWN, CONTAINED))
_BY_PATTERN = {rule.pattern: rule for rule in (*RULES, *OUTCOMES)}


def rule_of(pattern: str) -> Rule:
    """The registered rule or outcome of a pattern; `KeyError` for any other."""
    return _BY_PATTERN[pattern]


def label_of(pattern: str) -> str:
    """A pattern's short label (the TUI's diagnosis line); an unknown one's own name."""
    rule = _BY_PATTERN.get(pattern)
    return rule.label if rule is not None else pattern
