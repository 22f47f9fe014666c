/** Two reports cover the same runs when they name the same run ids, in any order. */
export function sameRuns(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id)) && set.size === new Set(b).size;
}
