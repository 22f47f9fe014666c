/** A value as Python source: True/False, numbers as they are, strings quoted. */
function python(v: string | number | boolean): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return typeof v === 'number' ? String(v) : JSON.stringify(v);
}

/**
 * The lines a user writes into their own script to have these overrides without Trainbench's probe:
 * the DataLoader's arguments in one call, the torch flags as statements. One place for both the app's
 * final card and the CLI's summary.
 */
export function overrideCode(overrides: Record<string, string | number | boolean>): string[] {
  const entries = Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b));
  const loaderArgs = entries.filter(([k]) => k.startsWith('dataloader.')).map(([k, v]) => `${k.slice('dataloader.'.length)}=${python(v)}`);
  const code: string[] = [];
  if (loaderArgs.length) code.push(`DataLoader(..., ${loaderArgs.join(', ')})`);
  for (const [k, v] of entries) {
    if (k === 'cudnn.benchmark') code.push(`torch.backends.cudnn.benchmark = ${python(v)}`);
    else if (k === 'matmul.precision') code.push(`torch.set_float32_matmul_precision(${python(v)})`);
    // The script's optimizer class is its own: the argument is what to add where it is made.
    else if (k === 'optim.impl') code.push(`optimizer = torch.optim.YourOptimizer(params, ..., ${String(v)}=True)`);
    // A key this version does not know: said plainly rather than guessed at.
    else if (!k.startsWith('dataloader.')) code.push(`# ${k}=${String(v)}: no Python equivalent known to this version`);
  }
  return code;
}
