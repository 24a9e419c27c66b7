"""pydantic-graph's state persistence under the ResumeCore contract: `resume-check run
pydantic-graph`."""
