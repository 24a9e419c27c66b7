"""DBOS Transact on SQLite under the ResumeCore contract: `resume-check run dbos`."""
