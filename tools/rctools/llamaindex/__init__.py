"""LlamaIndex Workflows with Context snapshots on SQLite under the ResumeCore contract:
`resume-check run llamaindex`."""
