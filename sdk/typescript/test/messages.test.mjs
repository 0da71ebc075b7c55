// The payloads the helper builds, by node's test runner (`npm test`), on dist/.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const wire = require('../dist/messages.js');

test('a report leaves out what it was not given and carries v 1', () => {
  assert.deepEqual(wire.reportInput('step 1/3: build', { progress: 1, total: 3 }), {
    v: 1, statusMessage: 'step 1/3: build', progress: 1, total: 3,
  });
  assert.deepEqual(wire.reportInput('only words'), { v: 1, statusMessage: 'only words' });
  assert.deepEqual(wire.reportInput(undefined, { progress: 0.5, total: 1 }), {
    v: 1, progress: 0.5, total: 1,
  });
});

test('a report with nothing in it, or a progress that is not a number, is refused', () => {
  assert.throws(() => wire.reportInput(), /statusMessage, a progress, or both/);
  assert.throws(() => wire.reportInput('x', { progress: NaN }), /progress must be a finite number/);
  assert.throws(() => wire.reportInput('x', { progress: 1, total: Infinity }), /total must be/);
});

test('an approval is a form with one required boolean and an optional comment', () => {
  const request = wire.approvalRequest('Switch all traffic of shop to v2?');
  assert.deepEqual(request, {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: 'Switch all traffic of shop to v2?',
      requestedSchema: {
        type: 'object',
        properties: {
          approve: { type: 'boolean', title: 'Approve' },
          comment: { type: 'string', title: 'Comment', maxLength: 2000 },
        },
        required: ['approve'],
      },
    },
  });
});

test('an ask carries its options only when given, and copies the approvers', () => {
  const approvers = ['ops'];
  const ask = wire.askInput('q1', { approve: wire.approvalRequest('Go?') }, {
    statusMessage: 'waiting', approvers, timeoutSeconds: 60,
  });
  approvers.push('later');
  assert.deepEqual(ask.approvers, ['ops']);
  assert.equal(ask.timeoutSeconds, 60);
  assert.deepEqual(Object.keys(wire.askInput('q2', { a: wire.approvalRequest('Go?') })), [
    'v', 'questionId', 'inputRequests',
  ]);
});

test('an ask without a request, or with a timeout that is not positive, is refused', () => {
  assert.throws(() => wire.askInput('q1', {}), /at least one input request/);
  assert.throws(
    () => wire.askInput('q1', { a: wire.approvalRequest('Go?') }, { timeoutSeconds: 0 }),
    /timeoutSeconds must be greater than 0/,
  );
});

test('a form property without a type is refused by name', () => {
  assert.throws(() => wire.elicitation('Pick', { env: { enum: ['a'] } }), /"env" needs a type/);
});

test('only an accept whose approve is true approves', () => {
  assert.equal(wire.isApproved({ action: 'accept', content: { approve: true } }), true);
  assert.equal(wire.isApproved({ action: 'accept', content: { approve: false } }), false);
  assert.equal(wire.isApproved({ action: 'decline' }), false);
  assert.equal(wire.isApproved({ action: 'cancel' }), false);
  assert.equal(wire.isApproved(undefined), false);
});

test('a tool result is text content, with structured content when given', () => {
  assert.deepEqual(wire.toolResult('done'), { content: [{ type: 'text', text: 'done' }] });
  assert.deepEqual(wire.toolResult('done', { ok: true }), {
    content: [{ type: 'text', text: 'done' }], structuredContent: { ok: true },
  });
});

test('the signal names and the tool error type are the contract page\'s', () => {
  assert.deepEqual(wire.SIGNALS, {
    report: 'mcp.report', ask: 'mcp.ask', paused: 'mcp.paused', answer: 'mcp.answer',
    steer: 'mcp.steer', pause: 'mcp.pause', resume: 'mcp.resume',
  });
  assert.equal(wire.TOOL_ERROR_TYPE, 'McpToolError');
});
