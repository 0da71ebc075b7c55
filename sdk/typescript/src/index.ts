/**
 * @mcp-tasks/workflow: your Temporal TypeScript workflow as an interactive MCP task, through the
 * mcp-tasks interactive workflow contract (v1). See README.md.
 */
export * from './messages';
export * from './steering';
export * from './workflow';
