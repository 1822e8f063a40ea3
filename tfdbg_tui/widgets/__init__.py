"""Widgets shared by the panes."""
