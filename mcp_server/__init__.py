"""An MCP server (protocol revision 2026-07-28) with the Tasks extension, backed by Temporal."""
