// Reading results written before a capability's two targets shared one shape (ADR 0038): the benchmark's and the
// wizard's upgrades both move each target's own fields into `target`, with these.
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
