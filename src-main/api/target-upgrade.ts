// Reading results written before a capability's two targets shared one shape (ADR 0038): the benchmark's and the
// wizard's upgrades both move each target's own fields into `target`, with these.
import { orderIntervalCoverage } from './order-interval';

export type Raw = Record<string, unknown>;

export const pick = (r: Raw, keys: readonly string[]): Raw => Object.fromEntries(keys.filter((k) => k in r).map((k) => [k, r[k]]));
export const omit = (r: Raw, keys: readonly string[]): Raw => Object.fromEntries(Object.entries(r).filter(([k]) => !keys.includes(k)));

/**
 * A result in the shape from before `target` held each target's detail: its fields, and whether it was a script's
 * (its `target` the command, a list); null for anything else (a result already in the shape passes as it is).
 */
export function olderResult(raw: unknown): { r: Raw; oldScript: boolean } | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Raw;
  const target = r.target as Raw | undefined;
  const oldScript = target !== undefined && Array.isArray(target.command);
  return target !== undefined && !oldScript ? null : { r, oldScript };
}

/**
 * A result whose median interval over its repetitions (`ciKey`) was written before intervals carried their level
 * (ADR 0045): below 6 repetitions it was [min, max], whose coverage is the sign test's (75% for 3), so it reads with
 * that level instead of passing for 95%. Anything else passes as it is.
 */
export function withMedianLevel(raw: unknown, ciKey: string): unknown {
  if (typeof raw !== 'object' || raw === null) return raw;
  const r = raw as Raw;
  const ci = r[ciKey] as Raw | undefined;
  if (typeof ci !== 'object' || ci === null || 'coverage' in ci || !Array.isArray(r.repetitions)) return raw;
  const coverage = orderIntervalCoverage(r.repetitions.length);
  return coverage < 0.95 && r.repetitions.length > 0 ? { ...r, [ciKey]: { ...ci, coverage } } : raw;
}
