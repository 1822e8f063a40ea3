"""tfdbg-tui: a terminal debugger for TensorFlow 2 programs."""
