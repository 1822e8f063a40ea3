"""The app's screens: the debugger and its collaborators, the Trends view, the tensor
value view, and the keys (`?`), which lists every screen's."""
