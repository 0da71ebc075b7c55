/**
 * The wire of the interactive workflow contract, v1 (docs/reference/interactive-contract.md):
 * signal names and the JSON payloads they carry, and the pure functions that build the ones your
 * workflow sends. Nothing here touches Temporal, so the payloads can be built and checked
 * against the JSON Schema outside a workflow.
 *
 * Rules kept here:
 * - every payload is one JSON object with `"v": 1`;
 * - optional fields are left out, never sent as `null` (a receiver ignores what it does not
 *   know, but a `null` where a string belongs is not valid against the schema);
 * - an input request is the spec's `{method, params}`, with no JSON-RPC `id`.
 */

export const CONTRACT_VERSION = 1 as const;

/** Signal names, both directions. */
export const SIGNALS = {
  /** your workflow → the task workflow */
  report: 'mcp.report',
  ask: 'mcp.ask',
  paused: 'mcp.paused',
  /** the task workflow → your workflow */
  answer: 'mcp.answer',
  steer: 'mcp.steer',
  pause: 'mcp.pause',
  resume: 'mcp.resume',
} as const;

/** The error type that makes a workflow failure the tool's error result (`isError` true). */
export const TOOL_ERROR_TYPE = 'McpToolError';

/** A JSON value, as the payloads carry them. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The spec's `InputRequest`: a server-to-client request without a JSON-RPC id. */
export interface InputRequest {
  method: string;
  params: { [key: string]: Json };
}

/** The spec's `InputResponse` for an elicitation (the others pass through as they are). */
export interface InputResponse {
  action?: 'accept' | 'decline' | 'cancel';
  content?: { [key: string]: Json };
  [key: string]: Json | undefined;
}

export interface ReportInput {
  v: typeof CONTRACT_VERSION;
  statusMessage?: string;
  progress?: number;
  total?: number;
}

export interface AskInput {
  v: typeof CONTRACT_VERSION;
  questionId: string;
  inputRequests: { [key: string]: InputRequest };
  statusMessage?: string;
  approvers?: string[];
  timeoutSeconds?: number;
}

export interface PausedInput {
  v: typeof CONTRACT_VERSION;
  paused: boolean;
}

export interface AnswerInput {
  v: number;
  questionId: string;
  inputResponses?: { [key: string]: InputResponse };
  answeredBy?: { [key: string]: string };
  error?: { message: string; timedOut?: boolean };
}

export interface SteerInput {
  v: number;
  seq: number;
  message: string;
  from?: string;
}

/** `mcp.pause` and `mcp.resume` carry nothing but the version. */
export interface PauseInput {
  v: number;
}

/** Progress: a step `progress` of `total`, or a fraction with `total` 1. */
export interface Progress {
  progress: number;
  total?: number;
}

export interface AskOptions {
  /** shown as the task's statusMessage while the question waits */
  statusMessage?: string;
  /** who may answer, named as tools name them (e.g. "ops", "user:alice") */
  approvers?: string[];
  /** withdraw the question after this long: the answer is then an error with `timedOut` */
  timeoutSeconds?: number;
}

/** A primitive property of an elicitation form (the spec's PrimitiveSchemaDefinition). */
export interface FormProperty {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
  [key: string]: Json;
}

function defined<T extends object>(fields: T): T {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined),
  ) as T;
}

function finite(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isFinite(value)) {
    throw new TypeError(`${name} must be a finite number, not ${value}`);
  }
}

/** The `mcp.report` payload. */
export function reportInput(statusMessage?: string, progress?: Progress): ReportInput {
  finite('progress', progress?.progress);
  finite('total', progress?.total);
  if (statusMessage === undefined && progress === undefined) {
    throw new TypeError('report needs a statusMessage, a progress, or both');
  }
  return defined({
    v: CONTRACT_VERSION,
    statusMessage,
    progress: progress?.progress,
    total: progress?.total,
  });
}

/** The `mcp.ask` payload. */
export function askInput(
  questionId: string,
  inputRequests: { [key: string]: InputRequest },
  options: AskOptions = {},
): AskInput {
  if (Object.keys(inputRequests).length === 0) {
    throw new TypeError('a question needs at least one input request');
  }
  if (options.timeoutSeconds !== undefined && !(options.timeoutSeconds > 0)) {
    throw new TypeError(`timeoutSeconds must be greater than 0, not ${options.timeoutSeconds}`);
  }
  return defined({
    v: CONTRACT_VERSION,
    questionId,
    inputRequests,
    statusMessage: options.statusMessage,
    approvers: options.approvers === undefined ? undefined : [...options.approvers],
    timeoutSeconds: options.timeoutSeconds,
  });
}

/** The `mcp.paused` payload. */
export function pausedInput(paused: boolean): PausedInput {
  return { v: CONTRACT_VERSION, paused };
}

/** A form-mode `elicitation/create` input request. */
export function elicitation(
  message: string,
  properties: { [name: string]: FormProperty },
  required: string[] = [],
): InputRequest {
  for (const [name, property] of Object.entries(properties)) {
    if (!['string', 'number', 'integer', 'boolean', 'array'].includes(property?.type)) {
      // Every client rejects a form with an untyped property: say which one, here.
      throw new TypeError(`form property ${JSON.stringify(name)} needs a type`);
    }
  }
  const requestedSchema: { [key: string]: Json } = { type: 'object', properties };
  if (required.length > 0) requestedSchema.required = required;
  return { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } };
}

/** The field of an approval form that carries the decision. */
export const APPROVE_FIELD = 'approve';
/** The optional free-text field of an approval form. */
export const COMMENT_FIELD = 'comment';

/** A one-boolean approval: the message says what will be done once approved. */
export function approvalRequest(message: string): InputRequest {
  return elicitation(
    message,
    {
      [APPROVE_FIELD]: { type: 'boolean', title: 'Approve' },
      [COMMENT_FIELD]: { type: 'string', title: 'Comment', maxLength: 2000 },
    },
    [APPROVE_FIELD],
  );
}

/** Approved only by an accepted answer whose `approve` is true; a decline or cancel is not. */
export function isApproved(response: InputResponse | undefined): boolean {
  return response?.action === 'accept' && response.content?.[APPROVE_FIELD] === true;
}

/** A content block of a tool result. */
export type ContentBlock = { type: string; [key: string]: Json };

/** The tool's result as MCP has it (a `CallToolResult`). */
export interface ToolResult {
  content: ContentBlock[];
  structuredContent?: { [key: string]: Json };
  isError?: boolean;
}

/** A `CallToolResult`: `text` (or content blocks) and, optionally, structured content. */
export function toolResult(
  text: string | ContentBlock[],
  structuredContent?: { [key: string]: Json },
): ToolResult {
  const content = typeof text === 'string' ? [{ type: 'text', text }] : text;
  return defined({ content, structuredContent });
}
