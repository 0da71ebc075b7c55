// One Node process for many runs: each line on stdin is one JSON request, handed to `handle`;
// each answer is one JSON line on stdout, {exitCode, stdout, stderr}, what that run would have
// given as a process of its own. Runs go one at a time: while one runs, its writes to
// process.stdout and process.stderr are captured, process.exit(code) ends the run (not the
// process) with that code, and process.exitCode is the code of a run that returns.
import { createInterface } from "node:readline";

class RunExit extends Error {
  constructor(code) {
    super(`process.exit(${code})`);
    this.code = code;
  }
}

function capture(stream, sink) {
  const write = stream.write;
  stream.write = (chunk, encoding, callback) => {
    sink.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
    const done = typeof encoding === "function" ? encoding : callback;
    if (done) queueMicrotask(() => done());
    return true;
  };
  return () => {
    stream.write = write;
  };
}

async function runOne(handle, request) {
  const stdout = [];
  const stderr = [];
  const releaseOut = capture(process.stdout, stdout);
  const releaseErr = capture(process.stderr, stderr);
  const exit = process.exit;
  process.exit = (code) => {
    throw new RunExit(code ?? process.exitCode ?? 0);
  };
  process.exitCode = undefined;
  let exitCode;
  try {
    await handle(request);
    exitCode = process.exitCode ?? 0;
  } catch (error) {
    if (error instanceof RunExit) {
      exitCode = error.code;
    } else {
      stderr.push(String(error?.stack ?? error));
      exitCode = 1;
    }
  } finally {
    process.exit = exit;
    process.exitCode = undefined;
    releaseErr();
    releaseOut();
  }
  return { exitCode, stdout: stdout.join(""), stderr: stderr.join("") };
}

export async function serveLines(handle) {
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    const answer = await runOne(handle, JSON.parse(line));
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}
