"""What the panes show, as data: row models over what a dump keeps, and the pure functions
of a reader that answer a selection. No widget here; panes import these, never the other
way.
"""
