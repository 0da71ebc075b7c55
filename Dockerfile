# One image for both roles: `mcp-tasks server` and `mcp-tasks worker` (see docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY mcp_server ./mcp_server
COPY workflows ./workflows
COPY activities ./activities
RUN pip install --no-cache-dir . && useradd --create-home mcp
# What the demo's deploy and import_records read (and, for imports, write) at run time.
COPY --chown=mcp:mcp pipelines ./pipelines
COPY --chown=mcp:mcp imports ./imports
USER mcp
ENV MCP_TASKS_HOST=0.0.0.0 MCP_TASKS_PORT=8000
EXPOSE 8000
CMD ["mcp-tasks", "server"]
