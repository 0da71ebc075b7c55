"""Authentication of every request: the authenticators of `none`, `tokens` and `jwt`, and the
one MCP_TASKS_AUTH configures (modes.py). Used by the HTTP transport and the inbox alike."""
