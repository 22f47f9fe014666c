import type { ScriptTrainRequestInput } from '@api/script-target';
import type { ScriptBenchmarkRequest, ScriptBenchmarkRequestInput, ScriptOverrideKey } from '@api/script-target';
import { SCRIPT_OVERRIDE_KEYS, ScriptBenchmarkRequestSchema, parseCollector, parseOverride } from '@api/script-target';
import { shellWord } from '@api/shell-word';

/** The Script target as a person types it: one command line, env rows, override rows. */
export interface ScriptForm {
  commandLine: string;
  cwd: string;
  env: { name: string; value: string }[];
  overrides: { key: ScriptOverrideKey | ''; value: string }[];
  warmupSteps: number;
  /** Empty: the script runs to its own end. */
  steps: number | null;
  repeat: number;
  timeoutSeconds: number;
  /** A benchmark of a torchrun job: time its ranks at their collectives (once a step, from DDP's own stamps). */
  collectives?: boolean;
  /** And each gradient bucket through a Python hook (the bandwidth too; it costs small steps). */
  collectivesPerBucket?: boolean;
  /** A job across machines: this machine's address the other nodes reach (host[:port]); empty: one machine. */
  collector?: string;
}

export function emptyScriptForm(): ScriptForm {
  return { commandLine: '', cwd: '', env: [], overrides: [], warmupSteps: 5, steps: 20, repeat: 1, timeoutSeconds: 600 };
}

/**
 * Splits a command line as a POSIX shell would for words and quotes only (no
 * expansion, no pipes): the result is sent as argv, so nothing runs through a shell.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) word += line[++i];
      else word += c;
    } else if (c === '$' && line[i + 1] === "'") {
      // ANSI-C quotes, as shellWord writes a word with a control character: read back byte for byte.
      const read = ansiCQuoted(line, i + 2);
      word += read.text;
      i = read.end;
      inWord = true;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`the command has an unclosed ${quote} quote: ${line}`);
  if (inWord) words.push(word);
  return words;
}

/** \xHH, \uHHHH, \UHHHHHHHH: the digits after each (sticky, read where the escape is). */
const ANSI_C_HEX: Record<string, RegExp> = { x: /[0-9A-Fa-f]{1,2}/y, u: /[0-9A-Fa-f]{1,4}/y, U: /[0-9A-Fa-f]{1,8}/y };
const ANSI_C_NAMED: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };

/** The text of $'…' from `start` (past its opening quote) to its closing quote, and the closing quote's index. */
function ansiCQuoted(line: string, start: number): { text: string; end: number } {
  let text = '';
  for (let i = start; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") return { text, end: i };
    if (c !== '\\' || i + 1 >= line.length) {
      text += c;
      continue;
    }
    const e = line[++i]!;
    const digits = ANSI_C_HEX[e];
    if (digits) digits.lastIndex = i + 1;
    const hex = digits?.exec(line);
    const code = hex ? parseInt(hex[0], 16) : NaN;
    if (hex && code <= 0x10ffff) {
      text += String.fromCodePoint(code);
      i += hex[0].length;
    } else text += ANSI_C_NAMED[e] ?? `\\${e}`;
  }
  throw new Error(`the command has an unclosed $' quote: ${line}`);
}

/** Quotes argv back into one line for display ("Run this command?"); splitCommandLine reads it back. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map(shellWord).join(' ');
}

/** The command, folder, environment and override rows of a saved request (the form's other numbers are its own). */
export function scriptFieldsOf(target: { command: readonly string[]; cwd: string; env?: Record<string, string> }, overrides: Record<string, unknown> = {}): Pick<ScriptForm, 'commandLine' | 'cwd' | 'env' | 'overrides'> {
  return {
    commandLine: quoteArgv(target.command),
    cwd: target.cwd,
    env: Object.entries(target.env ?? {}).map(([name, value]) => ({ name, value })),
    overrides: Object.entries(overrides).map(([key, value]) => ({ key: key as ScriptOverrideKey, value: String(value) })),
  };
}

/** The request the form describes, checked by the API's own schema; throws with the bad field named. */
export function scriptRequestFromForm(form: ScriptForm): ScriptBenchmarkRequestInput {
  const command = splitCommandLine(form.commandLine);
  if (command.length === 0) throw new Error('command: type the command that trains, e.g. python3 train.py');
  const cwd = form.cwd.trim();
  if (!cwd.startsWith('/')) throw new Error(`working directory must be an absolute path, got ${JSON.stringify(cwd)}`);
  const env: Record<string, string> = {};
  for (const row of form.env) {
    if (!row.name.trim() && !row.value) continue;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(row.name.trim())) throw new Error(`environment variable name ${JSON.stringify(row.name)}: letters, digits and _ only`);
    env[row.name.trim()] = row.value;
  }
  const overrides: Record<string, string | number | boolean> = {};
  for (const row of form.overrides) {
    if (!row.key) continue;
    if (!SCRIPT_OVERRIDE_KEYS.includes(row.key)) throw new Error(`unknown override ${JSON.stringify(row.key)}`);
    const { key, value } = parseOverride(`${row.key}=${row.value}`);
    overrides[key] = value;
  }
  const request: ScriptBenchmarkRequestInput = {
    target: { kind: 'script', command, cwd, env },
    overrides,
    warmupSteps: form.warmupSteps,
    repeat: form.repeat,
    timeoutSeconds: form.timeoutSeconds,
    ...(form.steps ? { steps: form.steps } : {}),
    ...(form.collectives || form.collector?.trim() ? { collectives: true, ...(form.collectivesPerBucket ? { collectivesPerBucket: true } : {}) } : {}),
    ...(form.collector?.trim() ? { collector: collectorOf(form.collector) } : {}),
  };
  const checked = ScriptBenchmarkRequestSchema.safeParse(request);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new Error(`${issue.path.join('.') || 'request'}: ${issue.message}`);
  }
  return request;
}

/** The form's collector field as the request's, or an error naming the field and the value. */
function collectorOf(text: string): { host: string; port: number } {
  try {
    return parseCollector(text);
  } catch (err) {
    throw new Error(`address the other nodes reach: ${(err as Error).message}`, { cause: err });
  }
}

/** A request's collector as the form's field shows it (an IPv6 address in brackets when a port follows). */
export function collectorText(c: { host: string; port?: number }): string {
  if (!c.port) return c.host;
  return `${c.host.includes(':') ? `[${c.host}]` : c.host}:${c.port}`;
}

/** The Benchmarks form a script benchmark's request was made from (scriptRequestFromForm's inverse): what a re-attached benchmark runs. */
export function scriptBenchmarkFormOf(r: ScriptBenchmarkRequest): ScriptForm {
  const d = emptyScriptForm();
  return {
    ...scriptFieldsOf(r.target, r.overrides),
    warmupSteps: r.warmupSteps,
    steps: r.steps ?? null,
    repeat: r.repeat,
    timeoutSeconds: r.timeoutSeconds ?? d.timeoutSeconds,
    ...(r.collectives ? { collectives: true, ...(r.collectivesPerBucket ? { collectivesPerBucket: true } : {}) } : {}),
    ...(r.collector ? { collector: collectorText(r.collector) } : {}),
  };
}

/** The Script target of the New run form: no step bound until one is typed, no repeat (one launch). */
export function emptyScriptRunForm(): ScriptForm {
  return { ...emptyScriptForm(), steps: null, repeat: 1, timeoutSeconds: 7 * 24 * 3600 };
}

/** The Script target's form a script run's request was made from (scriptTrainRequest's inverse): what a re-attached run runs. */
export function scriptRunFormOf(request: ScriptTrainRequestInput): ScriptForm {
  const d = emptyScriptRunForm();
  return {
    ...scriptFieldsOf(request.target, request.overrides),
    warmupSteps: request.warmupSteps ?? d.warmupSteps,
    steps: request.maxSteps ?? null,
    repeat: 1,
    timeoutSeconds: request.timeoutSeconds ?? d.timeoutSeconds,
  };
}
