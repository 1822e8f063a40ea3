"""Example programs with a numerical bug, for `tfdbg-tui demo` and the docs."""
