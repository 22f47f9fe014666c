import type { ApiErrorPayload } from '../api/errors';

/**
 * JSON messages between the supervisor and the engine-host process. They stay
 * plain data so they cross both child_process and Electron's utilityProcess.
 */
export type HostMethod = 'version' | 'devices' | 'resolveDevice' | 'ping' | 'debug.abort';

export interface HostRequest {
  kind: 'request';
  id: number;
  method: HostMethod;
  params: unknown;
}

export type HostReply =
  | { kind: 'reply'; id: number; ok: true; result: unknown }
  | { kind: 'reply'; id: number; ok: false; error: ApiErrorPayload };

/** Sent once the addon is loaded, or with `error` when it could not be. */
export interface HostReady {
  kind: 'ready';
  pid: number;
  error?: string;
}

export type HostToSupervisor = HostReply | HostReady;

/** Environment variable that enables debug-only methods in the host (tests). */
export const HOST_DEBUG_ENV = 'TRAINBENCH_ENGINE_DEBUG';
