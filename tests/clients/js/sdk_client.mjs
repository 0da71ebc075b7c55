// The official TypeScript client (@modelcontextprotocol/client 2.x) with the official tasks
// package (@modelcontextprotocol/ext-tasks), driven by tests/clients/test_typescript_sdk.py.
// One Node process runs every case, one JSON line on stdin each (line_server.mjs):
//
//   {"url": URL, "era": ERA, "scenario": "list"}
//   {"url": URL, "era": ERA, "scenario": "call",   "tool": T, "args": {...}, "answer": {...}}
//   {"url": URL, "era": ERA, "scenario": "task",   "tool": T, "args": {...}, "answer": {...}}
//   {"url": URL, "era": ERA, "scenario": "cancel", "tool": T, "args": {...}}
//
// `call` is a plain client.callTool, `task` ext-tasks' session.callTool, `cancel` an ext-tasks
// call then its cancel. ERA is the client's own versionNegotiation: legacy (2025-11-25
// initialize), auto (discover, falling back to initialize) or modern (pinned to 2026-07-28).
// Elicitations are answered with `answer` ({action: "accept", content: ...}) by the client's own
// handler: the Client's elicitation/create request handler for `call`, ext-tasks'
// onInputRequest for `task`. Each case prints one JSON object: what the client returned, every
// elicitation it was asked, and (for `call`, whose onprogress callback makes the SDK send a
// progressToken) its progress; it exits 1 (its answer's exitCode) if the client threw.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  toolDeclarationFromMcpTool,
} from "@modelcontextprotocol/ext-tasks/client";
import { serveLines } from "./line_server.mjs";

const MODERN = "2026-07-28";
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const clientInfo = { name: "mcp-tasks-tests-ts-sdk", version: "1.0.0" };
const capabilities = { elicitation: {}, extensions: { "io.modelcontextprotocol/tasks": {} } };
const NEGOTIATION = { legacy: "legacy", auto: "auto", modern: { pin: MODERN } };

function errorJson(error) {
  return { name: error?.constructor?.name, code: error?.code, message: String(error?.message ?? error), data: error?.data };
}

// ext-tasks sends 2026-07-28 task traffic below the SDK's codecs, through a dispatcher the host
// owns (the Inspector does the same): requests go out through the SDK's own transport, which
// derives MCP-Protocol-Version, Mcp-Method and Mcp-Name from the body; their responses are
// taken off the transport before the Client sees them.
function rawDispatcher(transport) {
  const pending = new Map();
  let counter = 0;
  const sdkOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const waiter = typeof message?.id === "string" && !("method" in message) ? pending.get(message.id) : undefined;
    if (waiter === undefined) return sdkOnMessage?.call(transport, message, extra);
    pending.delete(message.id);
    waiter("error" in message ? { kind: "error", error: message.error } : { kind: "result", result: message.result });
  };
  return (request, options) =>
    new Promise((resolve, reject) => {
      const id = `ext-tasks-${++counter}`;
      pending.set(id, resolve);
      const message = { jsonrpc: "2.0", id, method: request.method, ...(request.params ? { params: request.params } : {}) };
      const headers = options?.context?.headers;
      transport.send(message, headers ? { headers } : {}).catch((error) => {
        pending.delete(id);
        reject(error);
      });
    });
}

async function taskSession(client, transport, asked, answer) {
  const { tools } = await client.listTools();
  const declarations = new Map(tools.map((t) => [t.name, toolDeclarationFromMcpTool(t)]));
  const modern = client.getProtocolEra() === "modern";
  return createTaskSessionFromClient(client, {
    endpointId: "mcp-tasks-tests",
    tools: { currentTool: (name) => declarations.get(name) },
    ...(modern
      ? {
          rawDispatch: rawDispatcher(transport),
          v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities: capabilities },
        }
      : {}),
    onInputRequest: createApplicationInputHandler({
      elicitation: async (request) => {
        asked.push(request.params);
        return answer;
      },
      sampling: async () => {
        throw new Error("this test client does no sampling");
      },
      roots: async () => ({ roots: [] }),
    }),
    onError: (error) => console.error("ext-tasks:", error),
  });
}

async function untilTerminal(session, taskId, deadlineMs) {
  const controller = session.task(taskId);
  for (;;) {
    const view = await controller.snapshot();
    if (TERMINAL.has(view.status) || Date.now() > deadlineMs) return view;
    await new Promise((resolve) => setTimeout(resolve, view.suggestedPollIntervalMs ?? 500));
  }
}

async function runCase({ url, era, scenario, tool, args = {}, answer = null }) {
  const asked = [];
  const progress = [];
  const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: NEGOTIATION[era] } });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const out = { asked, progress };
  let session;
  try {
    await client.connect(transport);
    out.era = client.getProtocolEra();
    out.protocolVersion = client.getNegotiatedProtocolVersion();
    if (scenario === "list") {
      out.tools = (await client.listTools()).tools;
    } else if (scenario === "call") {
      client.setRequestHandler("elicitation/create", async (request) => {
        asked.push(request.params);
        return answer;
      });
      out.result = await client.callTool(
        { name: tool, arguments: args },
        { onprogress: (notification) => progress.push(notification) },
      );
    } else if (scenario === "task" || scenario === "cancel") {
      session = await taskSession(client, transport, asked, answer);
      const execution = await session.callTool(tool, args, { task: { preference: "prefer" } });
      out.kind = execution.kind;
      out.taskId = execution.handle?.taskId;
      if (scenario === "cancel") await execution.cancel();
      const { outcome } = await execution.settle();
      out.outcome = outcome.status;
      if (outcome.status === "completed") out.result = outcome.result;
      if (outcome.status === "failed") out.error = errorJson(outcome.error);
      if (scenario === "cancel" && out.taskId) {
        out.status = (await untilTerminal(session, out.taskId, Date.now() + 15000)).status;
      }
    } else {
      throw new Error(`unknown scenario ${scenario}`);
    }
  } catch (error) {
    out.error = errorJson(error);
    process.exitCode = 1;
  } finally {
    await session?.close();
    await client.close();
  }
  process.stdout.write(JSON.stringify(out));
}

await serveLines(runCase);
