import { utilityProcess } from 'electron';

import type { HostLauncher } from '../engine/host-launcher';
import { stderrCollector } from '../engine/host-launcher';
import type { HostToSupervisor } from '../engine/host-protocol';

/** Starts the engine host as an Electron utility process (the Node launcher's twin). */
export const utilityHostLauncher: HostLauncher = (entry, env) => {
  const child = utilityProcess.fork(entry, [], {
    env: { ...process.env, ...env },
    stdio: 'pipe',
    serviceName: 'Trainbench engine',
  });
  const stderr = stderrCollector();
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
  child.stdout?.on('data', (chunk: Buffer) => process.stdout.write(chunk));
  return {
    get pid() {
      return child.pid;
    },
    send: (message) => child.postMessage(message),
    onMessage: (listener) => child.on('message', (m: unknown) => listener(m as HostToSupervisor)),
    // utilityProcess reports only an exit code; a native abort shows up as a non-zero code.
    onExit: (listener) => child.once('exit', (code: number) => listener({ code, signal: null })),
    stderrTail: () => stderr.tail(),
    kill: () => {
      child.kill();
    },
  };
};
