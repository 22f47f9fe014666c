import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createInterface } from 'node:readline';

import type { GpuSample, GpuState } from '../../api/telemetry';
import { findNvidiaSmi, notFoundMessage } from './find-nvidia-smi';
import { parseNvidiaSmiLine, queryArgs, REASON_FIELDS } from './nvidia-smi-parser';

export interface GpuSamplerOptions {
  /** The nvidia-smi to run; TRAINBENCH_NVIDIA_SMI, else found on PATH or where Windows drivers put it. */
  command?: string;
  /** The environment to look it up in (process.env by default). */
  env?: NodeJS.ProcessEnv;
  /** The platform whose install places to search (process.platform by default). */
  platform?: NodeJS.Platform;
  /** Delay before restart n (the last repeats); reset after a run of 10 s. */
  restartDelaysMs?: number[];
}

const HEALTHY_RUN_MS = 10_000;

/**
 * One long-running `nvidia-smi --query-gpu … -lms <period>` per workbench,
 * parsed line by line. It is restarted with back-off when it dies and stopped
 * when nobody listens. A machine without nvidia-smi is a normal state.
 */
export class GpuSampler extends EventEmitter<{ sample: [GpuSample]; state: [GpuState] }> {
  /** Given by the caller or TRAINBENCH_NVIDIA_SMI; null: looked up at each start. */
  private readonly explicitCommand: string | null;
  private readonly env: NodeJS.ProcessEnv;
  private readonly platform: NodeJS.Platform;
  private readonly delays: number[];
  private child: ChildProcess | null = null;
  private period = 0;
  private reasonField = 0;
  private current: GpuState = { status: 'stopped', message: null, restarts: 0 };
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;
  private lastError: string | null = null;
  private command: string | null = null;

  constructor(options: GpuSamplerOptions = {}) {
    super();
    this.env = options.env ?? process.env;
    this.platform = options.platform ?? process.platform;
    this.explicitCommand = options.command ?? (this.env.TRAINBENCH_NVIDIA_SMI || null);
    this.delays = options.restartDelaysMs ?? [250, 500, 1000, 2000, 5000, 10_000];
  }

  state(): GpuState {
    return this.current;
  }

  /** The nvidia-smi that is answering now, for one-off queries (compute processes); null while none is. */
  liveCommand(): string | null {
    return this.current.status === 'ok' ? this.command : null;
  }

  /** The sampling process's pid: Trainbench's own load, not a neighbour's. */
  childPid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Starts sampling every periodMs, or restarts at the new period. */
  start(periodMs: number): void {
    this.stopping = false;
    if (this.current.status === 'absent') return;
    if (this.child && periodMs === this.period) return;
    this.period = periodMs;
    if (this.child) {
      const old = this.child;
      this.child = null;
      old.kill();
    }
    this.spawn();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const child = this.child;
    this.child = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const forced = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(forced);
    }
    if (this.current.status !== 'absent') this.setState('stopped', null);
  }

  private setState(status: GpuState['status'], message: string | null): void {
    if (this.current.status === status && this.current.message === message) return;
    this.current = { status, message, restarts: this.current.restarts };
    this.emit('state', this.current);
  }

  /** The executable to run, or null (and the state says where it was looked for). */
  private resolveCommand(): string | null {
    if (this.explicitCommand) return this.explicitCommand;
    const lookup = findNvidiaSmi(this.env, this.platform);
    if (!lookup.command) this.setState('absent', notFoundMessage(lookup));
    return lookup.command;
  }

  private spawn(): void {
    const started = Date.now();
    const command = this.resolveCommand();
    if (!command) return;
    this.command = command;
    let child: ChildProcess;
    try {
      child = spawn(command, queryArgs(this.period, REASON_FIELDS[this.reasonField]), { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      this.setState('error', `cannot run ${command}: ${(err as Error).message}`);
      return;
    }
    this.child = child;
    this.lastError = null;
    if (this.current.status !== 'ok') this.setState(this.current.restarts > 0 ? 'restarting' : 'starting', this.current.message);

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        this.child = null;
        this.setState('absent', `no NVIDIA GPU found: ${command} is not installed or not on PATH`);
      } else {
        this.lastError = err.message;
      }
    });
    const onLine = (line: string) => {
      const parsed = parseNvidiaSmiLine(line);
      if (parsed.kind === 'gpu') {
        this.setState('ok', null);
        this.emit('sample', parsed.sample);
      } else if (parsed.kind === 'error') {
        this.lastError = parsed.message;
        if (/is not a valid field/i.test(parsed.message) && this.reasonField + 1 < REASON_FIELDS.length) {
          this.reasonField++; // an older driver: ask for throttle reasons by their old name
          return;
        }
        this.setState('error', parsed.message);
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', (l) => l.trim() && onLine(l));

    child.on('exit', (code, signal) => {
      if (this.child !== child) return; // replaced or stopped
      this.child = null;
      if (this.stopping || this.current.status === 'absent') return;
      const ran = Date.now() - started;
      if (ran > HEALTHY_RUN_MS) this.attempt = 0;
      const delay = this.delays[Math.min(this.attempt, this.delays.length - 1)];
      this.attempt++;
      this.current = { ...this.current, restarts: this.current.restarts + 1 };
      const why = signal ? `killed by ${signal}` : `exited with code ${code}`;
      this.setState('restarting', `nvidia-smi ${why} after ${(ran / 1000).toFixed(1)} s${this.lastError ? ` (${this.lastError})` : ''}; restarting in ${(delay / 1000).toFixed(1)} s`);
      this.timer = setTimeout(() => {
        this.timer = null;
        if (!this.stopping) this.spawn();
      }, delay);
    });
  }
}
