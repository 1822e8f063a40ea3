"""The proof of a fix and the one-op reproduction (`tfdbg-tui repro`).

`op_fixes` is the table of how each op is called (its fixed form is the fix table's,
`reader.analysis.diagnosis.fixes`); `script` writes the
self-contained script and the ``.npz`` of the stored inputs, and runs it in a fresh
process for the proof (`proof`). Nothing here imports TensorFlow: the script does, in
its own process, so the report and the app never pay TensorFlow's import.
"""
