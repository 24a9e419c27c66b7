"""Restate: workflows on a private restate-server, recorded from their journal."""
