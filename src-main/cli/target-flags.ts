import path from 'node:path';

import { InvalidArgumentError } from 'commander';

import type { ScriptOverrides, ScriptTarget } from '../api/script-target';
import { parseOverride } from '../api/script-target';
import { UsageError } from './usage-error';

/**
 * The flags a command reads for a script target (your own command after '--'): the command itself,
 * where it runs (--cwd, --env), the overrides it runs with (--set), and how long a launch may take.
 */

export function secondsArg(value: string): number {
  const n = Number(value);
  if (!(n >= 1)) throw new InvalidArgumentError(`--timeout must be a number of seconds >= 1, got ${JSON.stringify(value)}`);
  return n;
}

/** Collects repeated `--set key=value`, refusing an unknown key (with the known ones) or a bad value at once. */
export function collectOverride(text: string, previous: ScriptOverrides = {}): ScriptOverrides {
  try {
    const { key, value } = parseOverride(text);
    return { ...previous, [key]: value };
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** Collects repeated `--env NAME=value`. */
export function collectEnv(text: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`--env takes NAME=value, got ${JSON.stringify(text)}`);
  return { ...previous, [text.slice(0, eq)]: text.slice(eq + 1) };
}

/** The command after `--`, run in --cwd (default: here). */
export function scriptTarget(command: string[], flags: { cwd?: string; env?: Record<string, string> }): ScriptTarget {
  if (command.length === 0) throw new UsageError("no command to run: give it after '--', e.g. trainbench benchmark-training -- python3 train.py");
  return { kind: 'script', command, cwd: path.resolve(flags.cwd ?? process.cwd()), env: flags.env ?? {} };
}
