# One image for both roles: `mcp-tasks server` and `mcp-tasks worker` (see docker-compose.yml).
# Stage 1 builds the project's wheel; stage 2 installs only that wheel (no sources, no build tools).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mcp_server ./mcp_server
COPY mcp_tasks ./mcp_tasks
COPY workflows ./workflows
COPY activities ./activities
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
WORKDIR /app
# The dependencies exactly as locked (every pin hash-checked; `make lock` refreshes the file),
# then the project's wheel without resolving anything again.
COPY requirements/runtime.txt /tmp/runtime.txt
RUN pip install --no-cache-dir --require-hashes -r /tmp/runtime.txt && rm /tmp/runtime.txt
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels \
    && groupadd --gid 10001 mcp && useradd --uid 10001 --gid 10001 --create-home mcp \
    && mkdir /tools && chown mcp:mcp /tools
# What the demo's deploy and import_records read (and, for imports, write) at run time.
COPY --chown=mcp:mcp pipelines ./pipelines
COPY --chown=mcp:mcp imports ./imports
# Numeric, so Kubernetes' runAsNonRoot can verify it (deploy/k8s runs as 10001 too).
USER 10001:10001
# A team's own tools without rebuilding: mount a folder on /tools and pass
# `--tools /tools/my_tools.py` (or set MCP_TASKS_TOOL_MODULES=/tools/my_tools.py).
VOLUME ["/tools"]
ENV MCP_TASKS_HOST=0.0.0.0 MCP_TASKS_PORT=8000
EXPOSE 8000
CMD ["mcp-tasks", "server"]
