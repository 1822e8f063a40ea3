"""Instrument a TensorFlow 2 program so that it writes a tfdbg-tui dump."""
