"""One module per pane of the debugger screen (DESIGN.md §2)."""
