/**
 * ShipRelease: a team's own workflow, run by its own worker, exposed as the MCP tool
 * `ship_release` (tools.toml). Through @mcp-tasks/workflow it reports each step, asks for the
 * approval before the one step that cannot be undone, and returns a structured result; a
 * declined approval ends it as a tool error, and a cancelled task rolls it back. It may be
 * paused before each step (a safe point), and the steering messages it was sent by then are in
 * its result.
 */
import { CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import {
  approve,
  listen,
  QuestionError,
  report,
  safePoint,
  steerMessages,
  toolResult,
  ToolError,
  type Json,
  type ToolResult,
} from '@mcp-tasks/workflow';

import type * as activities from './activities';

const { build, migrate, switchTraffic, rollBack } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
});

export interface ShipReleaseInput {
  service: string;
  version: string;
  /** how long the approval may wait; unanswered by then, the release is rolled back */
  approval_timeout_seconds?: number;
}

export async function ShipRelease({
  service,
  version,
  approval_timeout_seconds: timeoutSeconds,
}: ShipReleaseInput): Promise<ToolResult> {
  listen();
  let migrated = false;
  try {
    await safePoint();
    await report(`step 1/3: building ${service} ${version}`, { progress: 0, total: 3 });
    const image = await build(service, version);
    await safePoint();
    await report(`step 2/3: migrating the database of ${service}`, { progress: 1, total: 3 });
    migrated = true;
    await migrate(service, version);
    // The approval names what it will do: the one step that cannot be undone.
    const approval = await approve(
      `Switch all traffic of ${service} to ${version} (image ${image})?`,
      {
        statusMessage: `step 3/3: waiting for approval to switch ${service} to ${version}`,
        timeoutSeconds,
      },
    ).catch(async (err: unknown) => {
      if (!(err instanceof QuestionError)) throw err;
      // Withdrawn unanswered (or refused by the server): nothing is switched.
      const note = await rollBack(service, version);
      throw new ToolError(`No approval: ${err.message}; ${note}`, {
        service,
        version,
        switched: false,
        timedOut: err.timedOut,
      });
    });
    if (!approval.approved) {
      const note = await rollBack(service, version);
      throw new ToolError(
        `Declined: traffic of ${service} was not switched to ${version}; ${note}`,
        { service, version, switched: false },
      );
    }
    // Paused while it waited for the approval, it holds here, before the switch.
    await safePoint();
    await report(`step 3/3: switching traffic of ${service} to ${version}`, { progress: 2, total: 3 });
    await switchTraffic(service, version);
    await report(`${service} ${version} is live`, { progress: 3, total: 3 });
    const structured: { [key: string]: Json } = { service, version, image, switched: true };
    if (approval.answeredBy !== undefined) structured.approvedBy = approval.answeredBy;
    if (approval.comment !== undefined) structured.comment = approval.comment;
    const steering = steerMessages().map(({ seq, message }) => ({ seq, message }));
    if (steering.length > 0) structured.steering = steering;
    return toolResult(`${service} ${version} is live (image ${image})`, structured);
  } catch (err) {
    if (isCancellation(err) && migrated) {
      // The task was cancelled: undo what was done, in a scope the cancellation cannot stop,
      // then let the cancellation end the workflow.
      await CancellationScope.nonCancellable(() => rollBack(service, version));
    }
    throw err;
  }
}
