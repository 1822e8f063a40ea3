"""One module per pane of the debugger screen (docs/architecture.md)."""
