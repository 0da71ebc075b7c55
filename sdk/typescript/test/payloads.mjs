// Prints, as one JSON object, every kind of payload the helper sends, keyed by signal name:
// tests/sdk/test_typescript_helper.py validates them against the contract's JSON Schema.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const wire = require('../dist/messages.js');

const approval = wire.approvalRequest('Switch all traffic of shop to v2 (image shop:v2)?');
const form = wire.elicitation(
  'Which region first?',
  { region: { type: 'string', enum: ['eu', 'us'] }, replicas: { type: 'integer', minimum: 1 } },
  ['region'],
);
console.log(JSON.stringify({
  [wire.SIGNALS.report]: [
    wire.reportInput('step 1/3: building shop v2', { progress: 0, total: 3 }),
    wire.reportInput('only a status message'),
    wire.reportInput(undefined, { progress: 0.25, total: 1 }),
  ],
  [wire.SIGNALS.ask]: [
    wire.askInput('q1', { approve: approval }),
    wire.askInput('q2', { approve: approval, region: form }, {
      statusMessage: 'waiting for approval', approvers: ['ops', 'user:alice'], timeoutSeconds: 3600,
    }),
  ],
  [wire.SIGNALS.paused]: [wire.pausedInput(true), wire.pausedInput(false)],
}));
