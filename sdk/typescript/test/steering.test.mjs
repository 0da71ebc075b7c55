// The steering queue's rules (src/steering.ts), by node's test runner (`npm test`), on dist/.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const { SteerQueue } = require('../dist/steering.js');

const steer = (seq, message, from) => ({ v: 1, seq, message, ...(from ? { from } : {}) });

test('messages are taken in seq order whatever order they arrived in', () => {
  const queue = new SteerQueue();
  for (const seq of [3, 1, 2]) assert.equal(queue.add(steer(seq, `m${seq}`)), true);
  assert.deepEqual(queue.takeAll().map((m) => m.seq), [1, 2, 3]);
  assert.equal(queue.size, 0);
});

test('a seq queued or already taken is a duplicate and dropped', () => {
  const queue = new SteerQueue();
  queue.add(steer(1, 'first'));
  assert.equal(queue.add(steer(1, 'first again')), false);
  assert.deepEqual(queue.takeNext(), { seq: 1, message: 'first' });
  assert.equal(queue.add(steer(1, 'late copy')), false);
  assert.equal(queue.add(steer(2, 'second', 'alice')), true);
  assert.deepEqual(queue.takeNext(), { seq: 2, message: 'second', from: 'alice' });
  assert.equal(queue.takeNext(), undefined);
});

test('a payload without an integer seq or a string message is dropped', () => {
  const queue = new SteerQueue();
  for (const bad of [undefined, {}, { v: 1, seq: 1.5, message: 'x' }, { v: 1, seq: '1', message: 'x' },
    { v: 1, seq: 1 }, { v: 1, seq: 1, message: 7 }]) {
    assert.equal(queue.add(bad), false, JSON.stringify(bad));
  }
  assert.equal(queue.size, 0);
});

test('a payload of a later version keeps what it knows and ignores the rest', () => {
  const queue = new SteerQueue();
  assert.equal(queue.add({ v: 2, seq: 1, message: 'go', priority: 'high' }), true);
  assert.deepEqual(queue.takeAll(), [{ seq: 1, message: 'go' }]);
});
