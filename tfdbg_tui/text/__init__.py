"""Formatting shared by panes and the commands: dump text shown literally, summaries,
fitting text to a width, the console, step sparklines.
"""
