// The MCP Inspector's CLI (`mcp-inspector --cli ARGS`), one invocation per line on stdin
// (`{"argv": [ARGS...]}`), all in this one Node process: the launcher imports the same runCli
// and handleError and calls them the same way. Driven by tests/clients/test_inspector.py.
import { serveLines } from "./line_server.mjs";

const { runCli, handleError } = await import(
  "./node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
);

await serveLines(async ({ argv }) => {
  try {
    await runCli([process.execPath, "mcp-inspector", ...argv]);
  } catch (error) {
    await handleError(error); // writes the JSON error envelope to stderr, then process.exit(code)
  }
});
