/**
 * The steering messages a workflow has received and not yet taken, in `seq` order. Pure (no
 * Temporal), so its rules are tested on their own:
 * - messages are taken in `seq` order, whatever order their signals arrived in;
 * - a `seq` already queued or already taken is a duplicate and is dropped;
 * - a payload without an integer `seq` or a string `message` is dropped.
 */
import type { SteerInput } from './messages';

/** A steering message, in the order the client sent them. */
export interface SteerMessage {
  seq: number;
  message: string;
  from?: string;
}

export class SteerQueue {
  private queued: SteerMessage[] = [];
  private lastTaken = 0;

  /** Queue a received `mcp.steer` payload; false when it was dropped. */
  add(steer: SteerInput | undefined): boolean {
    if (!Number.isInteger(steer?.seq) || typeof steer?.message !== 'string') return false;
    if (steer.seq <= this.lastTaken || this.queued.some((queued) => queued.seq === steer.seq)) {
      return false;
    }
    const message: SteerMessage = { seq: steer.seq, message: steer.message };
    if (typeof steer.from === 'string') message.from = steer.from;
    this.queued.push(message);
    this.queued.sort((a, b) => a.seq - b.seq);
    return true;
  }

  get size(): number {
    return this.queued.length;
  }

  /** Every queued message, in order. */
  takeAll(): SteerMessage[] {
    const taken = this.queued.splice(0);
    if (taken.length > 0) this.lastTaken = taken[taken.length - 1].seq;
    return taken;
  }

  /** The first queued message, if any. */
  takeNext(): SteerMessage | undefined {
    const next = this.queued.shift();
    if (next !== undefined) this.lastTaken = next.seq;
    return next;
  }
}
