// The official TypeScript SDK of the 2025-11-25 era (@modelcontextprotocol/sdk 1.x), with its
// in-core tasks (client.experimental.tasks), driven by tests/clients/test_typescript_sdk.py.
// One Node process runs every case, one JSON line on stdin each (line_server.mjs):
// {"url": URL, "scenario": S, "tool": T, "args": {...}, "answer": {...}}, where S is
//
//   list                          tools/list
//   call                          client.callTool
//   task                          callToolStream with a task
//   cancel                        callToolStream, cancelTask
//   follow                        callTool, then the follow-up tools: task_respond, task_status
//
// Elicitations (elicitation/create requests the server sends on an SSE response) are answered
// with `answer` by the client's own request handler; `call` records the progress
// notifications it gets (an onprogress callback makes the SDK send a progressToken). `follow`
// declares no elicitation (a host that cannot show a form): the call ends in the follow-up
// result, and the client answers with task_respond {taskId, ...answer} and reads
// task_status until the task's own result. Each case prints one JSON object (exit 1 if it threw).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveLines } from "./line_server.mjs";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const TASK = { ttl: 60000 };

function errorJson(error) {
  return { name: error?.constructor?.name, code: error?.code, message: String(error?.message ?? error), data: error?.data };
}

async function runCase({ url, scenario, tool, args = {}, answer = null }) {
  const asked = [];
  const progress = [];
  const asks = scenario !== "follow";
  const client = new Client({ name: "mcp-tasks-tests-ts-sdk-v1", version: "1.0.0" }, { capabilities: asks ? { elicitation: {} } : {} });
  if (asks) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return answer;
    });
  }

  async function followUp(out) {
    out.result = await client.callTool({ name: tool, arguments: args });
    const taskId = out.result.structuredContent?.taskId;
    if (!taskId) return;
    out.answered = await client.callTool({ name: "task_respond", arguments: { taskId, ...answer } });
    const deadline = Date.now() + 20000;
    for (;;) {
      out.final = await client.callTool({ name: "task_status", arguments: { taskId } });
      const status = out.final.structuredContent?.status;
      if ((status !== "working" && status !== "input_required") || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const out = { asked, progress };
  try {
    await client.connect(transport);
    out.protocolVersion = transport.protocolVersion;
    out.sessionId = transport.sessionId;
    if (scenario === "list") {
      out.tools = (await client.listTools()).tools;
    } else if (scenario === "call") {
      out.result = await client.callTool({ name: tool, arguments: args }, undefined, {
        onprogress: (notification) => progress.push(notification),
      });
    } else if (scenario === "follow") {
      await followUp(out);
    } else if (scenario === "task" || scenario === "cancel") {
      const stream = client.experimental.tasks.callToolStream({ name: tool, arguments: args }, undefined, { task: TASK });
      out.statuses = [];
      for await (const message of stream) {
        if (message.type === "taskCreated") {
          out.taskId = message.task.taskId;
          if (scenario === "cancel") {
            await client.experimental.tasks.cancelTask(out.taskId);
            break;
          }
        } else if (message.type === "taskStatus") {
          out.statuses.push(message.task.status);
        } else if (message.type === "result") {
          out.result = message.result;
        } else if (message.type === "error") {
          out.error = errorJson(message.error);
        }
      }
      if (scenario === "cancel" && out.taskId) {
        const deadline = Date.now() + 15000;
        for (;;) {
          const task = await client.experimental.tasks.getTask(out.taskId);
          out.status = task.status;
          if (TERMINAL.has(task.status) || Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 500));
        }
      }
    } else {
      throw new Error(`unknown scenario ${scenario}`);
    }
  } catch (error) {
    out.error = errorJson(error);
    process.exitCode = 1;
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  process.stdout.write(JSON.stringify(out));
}

await serveLines(runCase);
