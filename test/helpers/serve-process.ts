import { spawn, type ChildProcess } from 'node:child_process';

import { CLI } from './repo';

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** What it has printed so far, stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

/** Runs `trainbench serve --port 0` as a user would and reads the URL it prints. */
export function startServeProcess(workspace: string, extraEnv: Record<string, string> = {}, extraArgs: string[] = []): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--workspace', workspace, ...extraArgs], {
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve printed no URL in 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /(http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[1],
        child,
        output: () => output,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with code ${code}:\n${output}`));
    });
  });
}
