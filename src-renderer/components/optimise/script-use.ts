import type { ScriptTarget } from '@api/script-target';

import { quoteArgv } from '../../stores/script-form';

type OverrideValue = string | number | boolean;

/** A value as Python source: True/False, numbers as they are, strings quoted. */
function python(v: OverrideValue): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return typeof v === 'number' ? String(v) : JSON.stringify(v);
}

/**
 * The kept overrides two ways: the command that runs the script unchanged with them (Trainbench's
 * probe applies them; without --steps it trains to the script's own end), and the lines a user
 * writes into their own script to have them without Trainbench.
 */
export function scriptUse(target: ScriptTarget, overrides: Record<string, OverrideValue>): { command: string; code: string[] } {
  const entries = Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b));
  const flags = [
    'trainbench',
    'benchmark-script',
    '--repeat',
    '1',
    '--cwd',
    target.cwd,
    ...Object.entries(target.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...entries.flatMap(([k, v]) => ['--set', `${k}=${String(v)}`]),
    '--',
    ...target.command,
  ];
  const loaderArgs = entries.filter(([k]) => k.startsWith('dataloader.')).map(([k, v]) => `${k.slice('dataloader.'.length)}=${python(v)}`);
  const code: string[] = [];
  if (loaderArgs.length) code.push(`DataLoader(..., ${loaderArgs.join(', ')})`);
  for (const [k, v] of entries) {
    if (k === 'cudnn.benchmark') code.push(`torch.backends.cudnn.benchmark = ${python(v)}`);
    else if (k === 'matmul.precision') code.push(`torch.set_float32_matmul_precision(${python(v)})`);
    // A key from a newer main process: said plainly rather than guessed at.
    else if (!k.startsWith('dataloader.')) code.push(`# ${k}=${String(v)}: no Python equivalent known to this window`);
  }
  return { command: quoteArgv(flags), code };
}
