import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import type { EngineState, EngineStatusEvent } from '../api/events';
import type { HostExit, HostLauncher, HostProcess } from './host-launcher';
import { nodeHostLauncher } from './host-launcher';
import type { HostMethod, HostToSupervisor } from './host-protocol';
import { packageRoot } from './package-root';

export interface SupervisorOptions {
  launcher?: HostLauncher;
  /** Path of the compiled engine-host script. */
  entry?: string;
  /** Extra environment for the host (e.g. the debug switch in tests). */
  env?: Record<string, string>;
  requestTimeoutMs?: number;
  /** A host that dies more than this many times within restartWindowMs is given up on, for one window. */
  maxRestarts?: number;
  restartWindowMs?: number;
  /** Delay before restart number n (the last value repeats). */
  restartDelaysMs?: number[];
}

export interface RequestOptions {
  /** null: no limit (training runs until it ends or is cancelled). */
  timeoutMs?: number | null;
  onEvent?: (data: unknown) => void;
}

interface Pending {
  method: HostMethod;
  onEvent?: (data: unknown) => void;
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout | null;
}

/** Finds engine-host.js next to this file, or in dist/ when running from TypeScript sources. */
export function defaultHostEntry(): string {
  const beside = path.join(__dirname, 'engine-host.js');
  if (existsSync(beside)) return beside;
  return path.join(packageRoot(), 'dist', 'src-main', 'engine', 'engine-host.js');
}

export function describeExit(exit: HostExit): string {
  if (exit.signal) return `killed by signal ${exit.signal}`;
  return `exited with code ${exit.code ?? 'unknown'}`;
}

/**
 * Starts the engine-host process, forwards requests to it, and restarts it when
 * it dies. A crash rejects the requests in flight with E_ENGINE_CRASHED and the
 * reason; the next request goes to a fresh host.
 */
export class EngineSupervisor extends EventEmitter<{ status: [EngineStatusEvent] }> {
  private readonly launcher: HostLauncher;
  private readonly entry: string;
  private readonly opts: Required<Omit<SupervisorOptions, 'launcher' | 'entry'>>;
  private host: HostProcess | null = null;
  private ready: Promise<void> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private state: EngineState = 'stopped';
  private restarts = 0;
  private readonly crashTimes: number[] = [];
  private lastFailure: string | null = null;
  private failedAt = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private stopping = false;

  constructor(options: SupervisorOptions = {}) {
    super();
    this.launcher = options.launcher ?? nodeHostLauncher;
    this.entry = options.entry ?? defaultHostEntry();
    this.opts = {
      env: options.env ?? {},
      requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
      maxRestarts: options.maxRestarts ?? 5,
      restartWindowMs: options.restartWindowMs ?? 60_000,
      restartDelaysMs: options.restartDelaysMs ?? [50, 500, 2000],
    };
  }

  status(): EngineStatusEvent {
    return { state: this.state, pid: this.host?.pid ?? null, restarts: this.restarts, lastFailure: this.lastFailure };
  }

  /** Starts the host if needed and resolves once it has loaded the addon. */
  start(): Promise<void> {
    this.stopping = false;
    if (!this.ready) this.ready = this.spawn();
    return this.ready;
  }

  async request<T>(method: HostMethod, params: unknown = {}, options: RequestOptions = {}): Promise<T> {
    if (this.state === 'failed') {
      // Given up on for one restart window, then a request may try again: a served workbench must not need a restart by hand.
      const waitMs = this.failedAt + this.opts.restartWindowMs - Date.now();
      if (waitMs > 0) {
        throw new ApiError('E_ENGINE_CRASHED', `the engine is not running: ${this.lastFailure ?? 'unknown failure'} (the next request in ${Math.ceil(waitMs / 1000)} s tries again)`);
      }
      this.crashTimes.length = 0;
      this.setState('stopped');
    }
    await this.start();
    const host = this.host;
    if (!host) throw new ApiError('E_ENGINE_CRASHED', `the engine is not running: ${this.lastFailure ?? 'stopped'}`);
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs === undefined ? this.opts.requestTimeoutMs : options.timeoutMs;
    return new Promise<T>((resolve, reject) => {
      const timer =
        timeoutMs === null
          ? null
          : setTimeout(() => {
              this.pending.delete(id);
              reject(new ApiError('E_TIMEOUT', `the engine did not answer ${method} within ${timeoutMs} ms`));
            }, timeoutMs);
      this.pending.set(id, { method, onEvent: options.onEvent, resolve: resolve as (v: unknown) => void, reject, timer });
      host.send({ kind: 'request', id, method, params });
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const host = this.host;
    this.host = null;
    this.ready = null;
    if (host) {
      const exited = new Promise<void>((resolve) => host.onExit(() => resolve()));
      host.kill();
      await exited;
    }
    this.rejectAll(() => new ApiError('E_CANCELLED', 'the engine was stopped'));
    this.setState('stopped');
  }

  private spawn(): Promise<void> {
    this.setState(this.restarts > 0 ? 'restarting' : 'starting');
    const host = this.launcher(this.entry, this.opts.env);
    this.host = host;
    return new Promise<void>((resolve, reject) => {
      let isReady = false;
      host.onMessage((msg: HostToSupervisor) => {
        if (msg.kind === 'ready') {
          if (msg.error) {
            this.fail(`the engine host could not load the addon: ${msg.error}`);
            host.kill();
            reject(new ApiError('E_INTERNAL', this.lastFailure ?? msg.error));
            return;
          }
          isReady = true;
          this.setState('ready');
          resolve();
        } else if (msg.kind === 'event') {
          const p = this.pending.get(msg.id);
          if (p?.onEvent) {
            try {
              p.onEvent(msg.data);
            } catch (err) {
              // A listener's throw would end the process from this message handler: it fails its own request instead.
              if (p.timer) clearTimeout(p.timer);
              this.pending.delete(msg.id);
              p.reject(err instanceof Error ? err : new Error(String(err)));
            }
          }
        } else if (msg.kind === 'reply') {
          const p = this.pending.get(msg.id);
          if (!p) return;
          if (p.timer) clearTimeout(p.timer);
          this.pending.delete(msg.id);
          if (msg.ok) p.resolve(msg.result);
          else p.reject(ApiError.fromPayload(msg.error));
        }
      });
      host.onExit((exit) => {
        if (this.host !== host) return; // an old host we already replaced or stopped
        this.host = null;
        this.ready = null;
        if (this.stopping) return;
        const running = [...this.pending.values()].map((p) => p.method);
        const stderr = host.stderrTail();
        const reason =
          describeExit(exit) +
          (running.length ? ` while running ${running.join(', ')}` : '') +
          (stderr ? ` (stderr: ${stderr.split('\n').slice(-3).join(' | ')})` : '');
        this.lastFailure = reason;
        this.rejectAll(
          () => new ApiError('E_ENGINE_CRASHED', `the engine host crashed: ${reason}; it is being restarted`),
        );
        if (!isReady) reject(new ApiError('E_ENGINE_CRASHED', `the engine host died while starting: ${reason}`));
        if (this.state !== 'failed') this.scheduleRestart();
      });
    });
  }

  private scheduleRestart(): void {
    const now = Date.now();
    this.crashTimes.push(now);
    while (this.crashTimes.length && now - this.crashTimes[0] > this.opts.restartWindowMs) this.crashTimes.shift();
    if (this.crashTimes.length > this.opts.maxRestarts) {
      this.fail(
        `the engine host crashed ${this.crashTimes.length} times within ${this.opts.restartWindowMs / 1000} s; last: ${this.lastFailure}`,
      );
      return;
    }
    const delays = this.opts.restartDelaysMs;
    const delay = delays[Math.min(this.crashTimes.length - 1, delays.length - 1)];
    this.restarts += 1;
    this.setState('restarting');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      // Errors surface through the next request; nobody awaits this start.
      this.start().catch(() => undefined);
    }, delay);
  }

  private fail(reason: string): void {
    this.lastFailure = reason;
    this.failedAt = Date.now();
    this.setState('failed');
  }

  private rejectAll(makeError: () => Error): void {
    for (const p of this.pending.values()) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(makeError());
    }
    this.pending.clear();
  }

  private setState(state: EngineState): void {
    this.state = state;
    this.emit('status', this.status());
  }
}
