"""CrewAI Flows with @persist on SQLite under the ResumeCore contract: `resume-check run crewai`."""
