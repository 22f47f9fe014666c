import { z } from 'zod';

/**
 * Ids and names that become one path segment in the workspace (runs, datasets,
 * jobs): letters, digits, '.', '_' and '-', and never starting with '.', so
 * '..' and hidden build folders can never be named from outside.
 */
export const ID_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
export const IdSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(ID_PATTERN, "ids are letters, digits, '.', '_' and '-', not starting with '.'");

/**
 * The one id scheme of every job and run, sortable by time and unique without coordination:
 * 20261121-134502-3f9a1c. `randomHex` is 6 hex digits. A job that records a run names its folder
 * with its id (train, benchmark, batch search, a script wizard), and ids sort by start.
 */
export function jobIdAt(now: Date, randomHex: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomHex}`;
}

/** Random hex digits (2 per byte) from the platform's CSPRNG (Web Crypto: Node 20 and every browser have it). */
function randomDigits(bytesWanted = 3): string {
  const bytes = new Uint8Array(bytesWanted);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A fresh job (and run) id: the only place ids are made, in the services, the CLI and the renderer alike. */
export function newJobId(now: Date = new Date()): string {
  return jobIdAt(now, randomDigits());
}

/**
 * The id of a part of a job (a benchmark's repetition, a search's trial, a wizard's batch search): the
 * job's id and what it is, so the engine's runs and cancels of one job are named after it, and 48 random
 * bits, so no client can take it first: a job's run id is broadcast, and a client's own job named
 * `<run id>-rep2` would otherwise hold the engine's id of a repetition not started yet.
 */
export function partId(jobId: string, part: string): string {
  return `${jobId}-${part}-${randomDigits(6)}`;
}
