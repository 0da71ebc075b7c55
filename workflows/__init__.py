"""Temporal workflows: every MCP task is one execution of one of these, its workflow ID the taskId.

Modules here are deterministic and free of side effects: the workflow sandbox re-imports them.
"""
