"""What a run means, by question: the hunt (`hunt/`), trends (`trends/`), `DumpReader`
(the run with its cached analyses), the diagnosis (`diagnosis/`), two runs compared
(`compare/`) and the jobs of several workers (`jobs`).
"""
