"""The `tfdbg-tui` commands, one module each: the app (`app_main`), `report`, `diff`
(`diff_report`) and `demo`; `tfdbg_tui.cli` dispatches to them.
"""
