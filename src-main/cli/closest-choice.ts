/** Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The choice a mistyped value most likely meant ("adam" -> "adamw"), or null when none is close. */
export function closestChoice(value: string, choices: readonly string[]): string | null {
  if (choices.length === 0) return null;
  const v = value.toLowerCase();
  const prefix = (c: string) => v.length >= 2 && (c.startsWith(v) || v.startsWith(c));
  const scored = choices.map((c) => ({ c, d: prefix(c) ? 0.5 : editDistance(v, c) }));
  const best = scored.reduce((a, b) => (b.d < a.d ? b : a));
  return best.d <= Math.max(1, Math.floor(best.c.length / 3)) ? best.c : null;
}
