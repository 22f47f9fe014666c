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
 * A run id, sortable by time and unique without coordination:
 * 20261121-134502-3f9a1c. `randomHex` is 6 hex digits from whatever random
 * source the caller has (Node's crypto in the services, the browser's in the UI).
 */
export function runIdAt(now: Date, randomHex: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomHex}`;
}

/**
 * Every job's id (jobs.list, jobs.cancel, the id field of its events) follows the run id
 * scheme: a job that records a run can name its folder with it, and ids sort by start.
 */
export const jobIdAt = runIdAt;
