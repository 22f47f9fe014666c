import { fork } from 'node:child_process';

import type { HostRequest, HostToSupervisor } from './host-protocol';

export interface HostExit {
  code: number | null;
  signal: string | null;
}

/** A running engine-host process, whatever started it (Node or Electron). */
export interface HostProcess {
  readonly pid: number | undefined;
  send(message: HostRequest): void;
  onMessage(listener: (message: HostToSupervisor) => void): void;
  onExit(listener: (exit: HostExit) => void): void;
  /** Last lines the host wrote to stderr: often the only trace of a native crash. */
  stderrTail(): string;
  kill(): void;
}

/** Starts the host script; Electron passes a utilityProcess-based launcher instead. */
export type HostLauncher = (entry: string, env: Record<string, string>) => HostProcess;

const STDERR_TAIL_BYTES = 4096;

/** Keeps the end of a stream's text, bounded, and mirrors it to our stderr. */
export function stderrCollector(): { push(chunk: Buffer | string): void; tail(): string } {
  let tail = '';
  return {
    push(chunk) {
      const text = chunk.toString();
      process.stderr.write(text);
      tail = (tail + text).slice(-STDERR_TAIL_BYTES);
    },
    tail: () => tail.trim(),
  };
}

export const nodeHostLauncher: HostLauncher = (entry, env) => {
  const child = fork(entry, [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const stderr = stderrCollector();
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  return {
    get pid() {
      return child.pid;
    },
    send: (message) => {
      if (child.connected) child.send(message);
    },
    onMessage: (listener) => child.on('message', (m) => listener(m as HostToSupervisor)),
    onExit: (listener) => child.once('exit', (code, signal) => listener({ code, signal })),
    stderrTail: () => stderr.tail(),
    kill: () => {
      child.kill();
    },
  };
};
