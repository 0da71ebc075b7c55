/**
 * The team's worker: a real @temporalio/worker in its own Node process, serving ShipRelease on
 * the task queue tools.toml names, against the Temporal of MCP_TASKS_TEMPORAL_ADDRESS and
 * MCP_TASKS_NAMESPACE (what mcp-tasks itself reads).
 */
import { NativeConnection, Worker } from '@temporalio/worker';

import * as activities from './activities';

export const TASK_QUEUE = 'ship-releases';

async function main(): Promise<void> {
  const address = process.env.MCP_TASKS_TEMPORAL_ADDRESS || '127.0.0.1:7233';
  const namespace = process.env.MCP_TASKS_NAMESPACE || 'default';
  const connection = await NativeConnection.connect({ address });
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue: TASK_QUEUE,
      workflowBundle: { codePath: require.resolve('../lib/workflow-bundle.js') },
      activities,
    });
    console.log(`worker ready: task queue ${TASK_QUEUE}, namespace ${namespace}, Temporal ${address}`);
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
