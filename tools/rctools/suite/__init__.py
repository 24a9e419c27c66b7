"""What every ResumeCore runtime suite shares: options, the crash-safe trace writer and header,
the SIGKILL harness, typed reports, and the finish step that judges and reports.

A suite only records; `finish` hands the traces to resume-check's `judge` and never decides a
verdict itself.
"""
