"""What an operator sees of the server: Prometheus metrics (metrics.py, visibility.py), traces
(tracing.py), one log line per request (logging.py, record.py), and the probes (probes.py)."""
