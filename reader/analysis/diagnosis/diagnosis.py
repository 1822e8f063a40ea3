"""`Diagnosis`: why an op made NaN or infinity, in the user's terms, and the usual fix:
the registry's rules run on the op, the common evidence worded around the finding.

The root cause (`reader.analysis.hunt.root_cause`) says where; this module says why. It
tries the rules of `reader.analysis.diagnosis.registry` in order on the op that made a
non-finite tensor (the `Site`: its type, dtypes and the summaries of its inputs and
output); the first that finds its pattern names the diagnosis, and this module words
the evidence common to all (each input and the output) around its finding. When none
does, the pattern is ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from reader.analysis.diagnosis.chain import ChainLink, find_chain
from reader.analysis.diagnosis.expressions import enclosing_class
from reader.analysis.diagnosis.fixes import Fix, fix_for, refined_family
from reader.analysis.diagnosis.input_source import InputSource
from reader.analysis.diagnosis.registry import CONTAINED, PATTERNS, RULES, UNKNOWN, rule_of
from reader.analysis.diagnosis.rule import Rule, Site
from reader.analysis.diagnosis.wording import evidence_line as _evidence_line
from reader.analysis.diagnosis.wording import nonfinite_text as _nonfinite_text
from reader.analysis.hunt.root_cause import find_root_cause
from reader.model import Alert, RootCause

if TYPE_CHECKING:
    from reader.analysis.analysed_run import AnalysedRun

__all__ = ["PATTERNS", "Diagnosis", "diagnose_alert", "diagnose_cause", "diagnose_root_cause"]

# Patterns whose values no op in the dump made: nothing upstream to walk.
_NO_CHAIN = frozenset({rule_of("nonfinite_input").pattern})
# Tried again on an alert whose inputs were non-finite: infinities meeting make a NaN.
_INF_ARITHMETIC = rule_of("inf_arithmetic")


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why an alert's tensor went non-finite, and the usual fix.

    Attributes:
        pattern: One of `PATTERNS` (or a verdict's: `registry.VERDICTS`).
        explanation: One or two sentences in the user's terms (the expression, counts).
        suggestion: The usual fix for the pattern.
        evidence: The counts and facts the classification used, one line each.
        alert: The alert whose op is diagnosed (the root cause's, for a propagated one).
        source: ``nonfinite_input``: where the values came from, when the dump says.
        fix: The fix table's entry the suggestion is (`reader.analysis.diagnosis.fixes`),
            with the fixed computation as data for the proof, or None.
        chain: From the op upstream where the bad finite values were made (the origin)
            to the root cause (`reader.analysis.diagnosis.chain`); empty when no
            origin was found.
        chain_note: Why there is no chain, when the run's mode cannot show one.
    """

    pattern: str
    explanation: str
    suggestion: str
    evidence: tuple[str, ...]
    alert: Alert | None = None
    source: InputSource | None = None
    fix: Fix | None = None
    chain: tuple[ChainLink, ...] = ()
    chain_note: str | None = None


def diagnose_root_cause(reader: AnalysedRun) -> Diagnosis | None:
    """The diagnosis of the run's root cause; None when nothing went non-finite."""
    cause = reader.root_cause()
    return diagnose_cause(reader, cause) if cause is not None else None


def diagnose_alert(reader: AnalysedRun, alert: Alert) -> Diagnosis:
    """The diagnosis of one alert: its own op when that made the non-finite values;
    otherwise where they came from (inf arithmetic here, or the root cause upstream).
    A contained alert is diagnosed as such: why it did no harm."""
    containment = reader.harm().of_alert(alert)
    if containment is not None:
        return Diagnosis(
            CONTAINED.pattern,
            f"Contained ({containment.reason}): {containment.explanation}.",
            CONTAINED.fix,
            containment.evidence,
            alert,
        )
    local = find_root_cause(reader, alert, walk=False)
    site = Site.of(reader, local)
    if site.is_function_call:
        inner = [a for a in reader.alerts().alerts if a.kind == "graph" and a.step == alert.index]
        if inner:
            return diagnose_alert(reader, inner[0])
    bad_inputs = [(name, s) for name, s in site.inputs if s is not None and s.is_alert]
    if not bad_inputs:
        return diagnose_cause(reader, local)
    found = _diagnosed(site, _INF_ARITHMETIC)
    if found is not None:
        return found
    root = reader.root_cause(alert) or find_root_cause(reader, alert)
    upstream = diagnose_cause(reader, root)
    name, summary = bad_inputs[0]
    lead = (
        f"{site.subject} got {_nonfinite_text(summary)} from its input {name}; "
        f"they began upstream: "
    )
    return replace(
        upstream,
        explanation=lead + upstream.explanation,
        evidence=(_evidence_line(f"input {name}", summary), *upstream.evidence),
    )


def diagnose_cause(reader: AnalysedRun, cause: RootCause) -> Diagnosis:
    """Classify a root cause (an op whose known inputs were finite): the first rule of
    `registry.RULES` that finds its pattern, else ``unknown``."""
    site = Site.of(reader, cause)
    for rule in RULES:
        found = _diagnosed(site, rule)
        if found is not None:
            return _with_chain(reader, cause, _metric_only(reader, site, found))
    return _with_chain(
        reader,
        cause,
        _diagnosis(
            site,
            UNKNOWN,
            f"{site.described} made {_nonfinite_text(site.output)} "
            f"from {site.inputs_state}; no known pattern matches",
        ),
    )


def _with_chain(reader: AnalysedRun, cause: RootCause, diagnosis: Diagnosis) -> Diagnosis:
    """The diagnosis with the chain upstream of its root cause: the links, the chain's
    sentence after the explanation, the origin's evidence after the rest. Values that
    no op in the dump made (``nonfinite_input``) have no chain."""
    if diagnosis.pattern in _NO_CHAIN:
        return diagnosis
    chain = find_chain(reader, cause, diagnosis.pattern)
    sentence = chain.sentence
    fix = diagnosis.fix
    if chain.links and fix is not None and diagnosis.suggestion == fix.text:
        # A log of probabilities that saturated: the loss is computed from probabilities.
        fix = fix_for(refined_family(fix.family, chain.links[0].op_type), fix.context) or fix
    suggestion = fix.text if fix is not None else diagnosis.suggestion
    return replace(
        diagnosis,
        suggestion=chain.fix or suggestion,
        fix=None if chain.fix else fix,  # the origin's own fix is no entry of the table
        explanation=diagnosis.explanation + (f" {sentence}." if sentence else ""),
        evidence=(*diagnosis.evidence, *chain.evidence),
        chain=chain.links,
        chain_note=chain.note,
    )


# Phases whose non-finite values reach training: a NaN in none of them, made in a
# metric, leaves the loss, the gradients and the weights finite.
_TRAINING_PHASES = frozenset({"forward", "gradient", "optimizer", "restore", "init"})


def _metric_only(reader: AnalysedRun, site: Site, diagnosis: Diagnosis) -> Diagnosis:
    """``diagnosis``, saying so when only a metric went non-finite: the run's harmful
    values were all made in a Keras metric (`model_place`'s ``metric`` phase)."""
    if reader.place(site.alert).phase != "metric":
        return diagnosis
    harm = reader.harm()
    for alert in reader.alerts().alerts:
        if harm.of_alert(alert) is None and reader.place(alert).phase in _TRAINING_PHASES:
            return diagnosis
    name = enclosing_class(reader, site.cause.frame)
    metric = f"the metric {name}" if name else "a metric"
    if site.expression:
        metric += f" ({site.subject})"
    return replace(
        diagnosis,
        explanation=f"{diagnosis.explanation} The loss, the gradients and the weights stay "
        f"finite; only {metric} is NaN or infinite: training is unharmed, the "
        "metric's value is wrong.",
        evidence=(*diagnosis.evidence, "every harmful value was made in the metric phase"),
    )


def _diagnosed(site: Site, rule: Rule) -> Diagnosis | None:
    """The diagnosis of ``rule`` at ``site`` when its check finds its pattern."""
    assert rule.check is not None  # an outcome (`registry.OUTCOMES`) is never tried
    finding = rule.check(site)
    if finding is None:
        return None
    entry = finding.fix_entry if finding.fix is None else None
    return _diagnosis(
        site,
        rule,
        finding.explanation,
        finding.evidence,
        finding.fix or (entry.text if entry else None),
        finding.source,
        entry,
    )


def _diagnosis(
    site: Site,
    rule: Rule,
    explanation: str,
    extra: tuple[str, ...] = (),
    fix: str | None = None,
    source: InputSource | None = None,
    fix_entry: Fix | None = None,
) -> Diagnosis:
    """A diagnosis of ``rule``'s pattern: the explanation, the fix (the finding's, else
    the rule's), and the evidence: each input, the output, then what the check added."""
    evidence = [_evidence_line(f"input {name}", s) for name, s in site.inputs]
    tensor = f"{site.op_name or site.op_type}:{site.alert.slot}"
    evidence.append(_evidence_line(f"output `{tensor}`", site.output))
    evidence.extend(extra)
    return Diagnosis(
        pattern=rule.pattern,
        explanation=explanation + ".",
        suggestion=fix or rule.fix,
        evidence=tuple(evidence),
        alert=site.alert,
        source=source,
        fix=fix_entry,
    )
