"""What an operator sees of the server: Prometheus metrics (metrics.py, visibility.py), traces
(tracing.py), one log line per request (record.py; the format: mcp_tasks/logging.py), and the
probes (probes.py)."""
