"""The stdio transport: one MCP host that spawns this server, on newline-delimited JSON-RPC.

`channel.py` frames lines on stdin/stdout, `connection.py` serves the messages of both eras
with the same dispatch table as HTTP, `headers.py` stands in for the header layer stdio lacks,
and `server.py` wires them to the process's Temporal client.
"""
