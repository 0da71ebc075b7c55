/**
 * The contract from inside your workflow: `report()`, `ask()`/`approve()`, `steerMessages()`/
 * `nextSteer()`, `safePoint()` and `ToolError`. Call them only from workflow code (they use
 * the workflow's own APIs and so stay deterministic on replay).
 *
 * Your workflow runs as the child of the task workflow, whose ID it learns from its own parent
 * info; every message to it is a signal to that external workflow (a signal is the one message
 * a workflow can send to another in every SDK, and it is durable once recorded: the task
 * workflow gets it even while its worker is down).
 */

import {
  ApplicationFailure,
  condition,
  defineSignal,
  getExternalWorkflowHandle,
  setHandler,
  workflowInfo,
  type ExternalWorkflowHandle,
} from '@temporalio/workflow';

import {
  SIGNALS,
  TOOL_ERROR_TYPE,
  approvalRequest,
  askInput,
  isApproved,
  pausedInput,
  reportInput,
  COMMENT_FIELD,
  type AnswerInput,
  type AskInput,
  type AskOptions,
  type InputRequest,
  type InputResponse,
  type Json,
  type PauseInput,
  type PausedInput,
  type Progress,
  type ReportInput,
  type SteerInput,
} from './messages';
import { SteerQueue, type SteerMessage } from './steering';

export const reportSignal = defineSignal<[ReportInput]>(SIGNALS.report);
export const askSignal = defineSignal<[AskInput]>(SIGNALS.ask);
export const pausedSignal = defineSignal<[PausedInput]>(SIGNALS.paused);
export const answerSignal = defineSignal<[AnswerInput]>(SIGNALS.answer);
export const steerSignal = defineSignal<[SteerInput]>(SIGNALS.steer);
export const pauseSignal = defineSignal<[PauseInput]>(SIGNALS.pause);
export const resumeSignal = defineSignal<[PauseInput]>(SIGNALS.resume);

/** The answers to one question. */
export interface Answer {
  inputResponses: { [key: string]: InputResponse };
  /** who answered each key, when the task workflow knows */
  answeredBy: { [key: string]: string };
}

/** An approval's outcome: approved only by an accept whose `approve` is true. */
export interface Approval {
  approved: boolean;
  /** what the answer said: `accept`, `decline` or `cancel` */
  action: string;
  comment?: string;
  answeredBy?: string;
  response: InputResponse;
}

/** The task workflow refused the question or withdrew it (its `timeoutSeconds` passed). */
export class QuestionError extends Error {
  constructor(
    message: string,
    readonly questionId: string,
    readonly timedOut: boolean,
  ) {
    super(message);
    this.name = 'QuestionError';
  }
}

/**
 * Fail the tool with this error: its message becomes the result's text with `isError` true,
 * and `structuredContent`, when given, the result's structured content. Not retried.
 */
export class ToolError extends ApplicationFailure {
  constructor(message: string, structuredContent?: { [key: string]: Json }) {
    super(message, TOOL_ERROR_TYPE, true, structuredContent === undefined ? [] : [structuredContent]);
  }
}

/** What this run has received from the task workflow. */
interface RunState {
  runId: string;
  /** the task workflow (the parent); none when the workflow runs on its own */
  taskWorkflow: ExternalWorkflowHandle | undefined;
  questions: number;
  answers: Map<string, AnswerInput>;
  steers: SteerQueue;
  paused: boolean;
}

// Kept on the workflow's own globalThis, which the worker gives each workflow run (also when
// it reuses one V8 context for many), and checked against the run ID besides.
const STATE_KEY = '__mcpTasksWorkflowState';
const runs = globalThis as unknown as { [STATE_KEY]?: RunState };

/** This run's state; its signal handlers are installed on first use (Temporal keeps a signal
 * that arrives before its handler and delivers it once the handler is set). */
function run(): RunState {
  const info = workflowInfo();
  const state = runs[STATE_KEY];
  if (state !== undefined && state.runId === info.runId) return state;
  const parent = info.parent?.workflowId;
  const current: RunState = {
    runId: info.runId,
    taskWorkflow: parent === undefined ? undefined : getExternalWorkflowHandle(parent),
    questions: 0,
    answers: new Map(),
    steers: new SteerQueue(),
    paused: false,
  };
  runs[STATE_KEY] = current;
  setHandler(answerSignal, (answer) => {
    if (typeof answer?.questionId === 'string') current.answers.set(answer.questionId, answer);
  });
  setHandler(steerSignal, (steer) => {
    current.steers.add(steer);
  });
  setHandler(pauseSignal, () => {
    current.paused = true;
  });
  setHandler(resumeSignal, () => {
    current.paused = false;
  });
  return current;
}

/** Installs the handlers of the task workflow's signals now; each helper also does on first
 * use. Call it first thing when your workflow is steerable or pausable. */
export function listen(): void {
  run();
}

/** The task workflow, for a message that needs one (a question has nobody else to answer). */
function taskWorkflowFor(current: RunState, what: string): ExternalWorkflowHandle {
  if (current.taskWorkflow === undefined) {
    const type = workflowInfo().workflowType;
    throw new Error(
      `${type} is not running as an MCP task (it has no parent workflow): there is no task to ` +
        `send ${what} to`,
    );
  }
  return current.taskWorkflow;
}

/** The task's statusMessage and progress, as `tasks/get` and everything else shows them.
 * Outside an MCP task (no parent workflow) it does nothing, so the workflow runs on its own. */
export async function report(statusMessage?: string, progress?: Progress): Promise<void> {
  const payload = reportInput(statusMessage, progress);
  await run().taskWorkflow?.signal(reportSignal, payload);
}

/**
 * Ask one or several questions and wait until every key is answered. The task parks at
 * `input_required` meanwhile. A cancellation of the task cancels this wait (a
 * `CancelledFailure`, the Temporal way). A refused or withdrawn question is a `QuestionError`.
 * Outside an MCP task (no parent workflow) nobody could answer: it throws an `Error`, which
 * fails the workflow task (Temporal retries it, and the workflow shows why), not the workflow.
 */
export async function ask(
  inputRequests: { [key: string]: InputRequest },
  options: AskOptions = {},
): Promise<Answer> {
  const current = run();
  current.questions += 1;
  const questionId = `q${current.questions}`;
  const payload = askInput(questionId, inputRequests, options);
  await taskWorkflowFor(current, SIGNALS.ask).signal(askSignal, payload);
  await condition(() => current.answers.has(questionId));
  const answer = current.answers.get(questionId) as AnswerInput;
  current.answers.delete(questionId);
  if (answer.error !== undefined) {
    throw new QuestionError(answer.error.message, questionId, answer.error.timedOut === true);
  }
  return { inputResponses: answer.inputResponses ?? {}, answeredBy: answer.answeredBy ?? {} };
}

/**
 * One approval: `message` says what will be done once approved. Resolves with the decision;
 * a decline or a cancel of the question is `approved: false`, never an exception.
 */
export async function approve(
  message: string,
  options: AskOptions & { key?: string } = {},
): Promise<Approval> {
  const key = options.key ?? 'approve';
  const { key: _key, ...askOptions } = options;
  const answer = await ask({ [key]: approvalRequest(message) }, askOptions);
  const response = answer.inputResponses[key] ?? {};
  const comment = response.content?.[COMMENT_FIELD];
  const approval: Approval = {
    approved: isApproved(response),
    action: String(response.action ?? 'cancel'),
    response,
  };
  if (typeof comment === 'string' && comment !== '') approval.comment = comment;
  if (answer.answeredBy[key] !== undefined) approval.answeredBy = answer.answeredBy[key];
  return approval;
}

/** The steering messages received so far and not yet taken, in order. */
export function steerMessages(): SteerMessage[] {
  return run().steers.takeAll();
}

/** The next steering message; with `timeoutMs`, `undefined` when none came by then (a durable
 * timer). */
export async function nextSteer(timeoutMs?: number): Promise<SteerMessage | undefined> {
  const current = run();
  if (timeoutMs === undefined) {
    await condition(() => current.steers.size > 0);
  } else if (!(await condition(() => current.steers.size > 0, timeoutMs))) {
    return undefined;
  }
  return current.steers.takeNext();
}

/** True while a client has paused the task and not resumed it. */
export function isPaused(): boolean {
  return run().paused;
}

/**
 * A point where your workflow may be held: returns at once unless the task is paused; paused,
 * it tells the task workflow (`mcp.paused` true), waits for the resume, and tells it again
 * (`mcp.paused` false) before returning.
 */
export async function safePoint(): Promise<void> {
  const current = run();
  if (!current.paused) return;
  await current.taskWorkflow?.signal(pausedSignal, pausedInput(true));
  await condition(() => !current.paused);
  await current.taskWorkflow?.signal(pausedSignal, pausedInput(false));
}
