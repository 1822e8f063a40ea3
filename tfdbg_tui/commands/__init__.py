"""The `tfdbg-tui` commands, one module each: the app (`app_main`), `report`, `diff`
(`diff_report`), `demo` and `run` (with `ab_run` for `--ab`, both on `program_runs`);
`tfdbg_tui.cli` dispatches to them.
"""
