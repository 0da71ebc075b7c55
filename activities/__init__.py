"""Temporal activities: every side effect of a task happens here, never in a workflow."""
