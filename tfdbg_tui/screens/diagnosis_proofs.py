"""The proof of the diagnosis's fix in the whole diagnosis (`e`).

`DiagnosisProofs` is an object the debugger screen holds once the run is open. `e`
opens the diagnosis with its proof when one is kept; otherwise with a line saying the
op is being rerun, while a worker reruns it on its stored values as it ran and fixed
(`instrument.repro.proof`, in a process of its own: the app never imports
TensorFlow). The worker posts `ProofLoaded` to the screen, whose handler hands it back
here: the proof is kept per diagnosed alert and set on the box if it is still open.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.screen import Screen

from reader import AnalysedRun
from reader.analysis.diagnosis.diagnosis import Diagnosis
from reader.errors import DumpError
from tfdbg_tui.dialogs.text_dialog import TextDialog, diagnosis_dialog
from tfdbg_tui.widgets.diagnosis_line import diagnosis_text

# What the box says while the op is rerun.
PROVING = "rerunning the op on its stored values…"


@dataclass
class ProofLoaded(Message):
    """The proof of a diagnosis's fix, as one line."""

    diagnosis: Diagnosis
    text: str


class DiagnosisProofs:
    """The proofs of the diagnoses' fixes, read in workers and kept per alert.

    Args:
        screen: The debugger screen: it runs the workers and receives their messages.
        reader: The run's reader.
    """

    def __init__(self, screen: Screen, reader: AnalysedRun) -> None:
        self.screen = screen
        self.reader = reader
        self._kept: dict[tuple[str, int], str] = {}

    def dialog(self, diagnosis: Diagnosis) -> TextDialog:
        """The whole diagnosis with its proof, or with `PROVING` while a worker reruns
        the op (a diagnosis of no alert, a verdict, has no proof)."""
        alert = diagnosis.alert
        proof = None if alert is None else self._kept.get((alert.kind, alert.index))
        if alert is not None and proof is None:
            proof = PROVING
            self.screen.run_worker(
                partial(self._prove, diagnosis),
                name="proof",
                group="proof",
                exclusive=True,
                thread=True,
            )
        return diagnosis_dialog(diagnosis, proof)

    def _prove(self, diagnosis: Diagnosis) -> None:
        from instrument.repro.proof import prove
        from reader.analysis.diagnosis.culprit_values import culprit_values

        assert diagnosis.alert is not None
        try:
            cause = self.reader.root_cause(diagnosis.alert)
            text = "not proven: no root cause" if cause is None else ""
            if cause is not None:
                text = prove(culprit_values(self.reader, cause)).text()
        except DumpError as error:
            text = f"not proven: {error}"
        self.screen.post_message(ProofLoaded(diagnosis, text))

    def loaded(self, message: ProofLoaded, shown: Diagnosis | None) -> None:
        """Keep the proof; set it on the box when it still shows that diagnosis."""
        alert = message.diagnosis.alert
        assert alert is not None
        self._kept[(alert.kind, alert.index)] = message.text
        box = self.screen.app.screen
        if isinstance(box, TextDialog) and shown is message.diagnosis:
            box.show_text(diagnosis_text(message.diagnosis, full=True, proof=message.text))
