/**
 * Bundles the workflow code once at build time (lib/workflow-bundle.js) rather than at every
 * start, so a restarted worker picks up waiting tasks sooner.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { bundleWorkflowCode } from '@temporalio/worker';

async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./workflows'),
  });
  await writeFile(path.join(__dirname, 'workflow-bundle.js'), code);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
