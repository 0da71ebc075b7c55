"""The process's one Temporal client (connection.py) and the payload codec every client and
worker of the process converts data with (codec.py)."""
