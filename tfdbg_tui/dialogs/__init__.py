"""Modal dialogs: a prompt, the run picker and a text box (the diagnosis, the notices).

Below the panes: a pane or a screen opens a dialog, a dialog imports neither.
"""
