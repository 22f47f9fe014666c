import { overrideCode } from '@api/script-override-code';
import type { ScriptTarget } from '@api/script-target';

import { quoteArgv } from '../../view-models/script-target-form';

/**
 * The kept overrides two ways: the command that runs the script unchanged with them (Trainbench's
 * probe applies them; without --steps it trains to the script's own end), and the lines a user
 * writes into their own script to have them without Trainbench.
 */
export function scriptUse(target: ScriptTarget, overrides: Record<string, string | number | boolean>, device?: string): { command: string; code: string[] } {
  const entries = Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b));
  const flags = [
    'trainbench',
    'benchmark-training',
    '--repeat',
    '1',
    '--cwd',
    target.cwd,
    ...Object.entries(target.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...entries.flatMap(([k, v]) => ['--set', `${k}=${String(v)}`]),
    '--',
    ...target.command,
  ];
  return { command: quoteArgv(flags), code: overrideCode(overrides, { device }) };
}
