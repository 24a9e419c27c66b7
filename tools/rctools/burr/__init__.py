"""Burr's SQLitePersister under the ResumeCore contract: `resume-check run burr`."""
