/**
 * The side effects of a release, as activities: here they only say what they would do (and
 * take a moment, as a real build would), so the example runs anywhere.
 */
import { log, sleep } from '@temporalio/activity';

// Long enough to watch the steps go by in `tasks/get`, short enough for a test.
const STEP_MS = Number(process.env.SHIP_RELEASE_STEP_MS ?? 1000);

export async function build(service: string, version: string): Promise<string> {
  await sleep(STEP_MS);
  const image = `registry.example/${service}:${version}`;
  log.info(`built ${image}`);
  return image;
}

export async function migrate(service: string, version: string): Promise<void> {
  await sleep(STEP_MS);
  log.info(`migrated the database of ${service} to ${version}`);
}

export async function switchTraffic(service: string, version: string): Promise<void> {
  await sleep(STEP_MS);
  log.info(`switched all traffic of ${service} to ${version}`);
}

/** The clean-up of a release that stops before its traffic switch. */
export async function rollBack(service: string, version: string): Promise<string> {
  const note = `rolled back the migration of ${service} to ${version}`;
  log.info(note);
  return note;
}
