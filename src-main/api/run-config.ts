// A run's config as flat "path: value" rows, for the config panel and the
// table of differences between runs in Compare.

/**
 * Config keys that say where things are or which job ran rather than what was trained; left out of the rows
 * (a UI walk saw every pair of benchmarks "differ" in their jobId).
 */
const HIDDEN_KEYS = new Set(['runId', 'jobId', 'checkpointPath']);

/** One value as the panel shows it: numbers and strings as they are, short arrays inline. */
function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(shown).join(', ')}]`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * `{ options: { optimizer: { lr: 0.01 } } }` as `[['options.optimizer.lr', '0.01']]`, in
 * the config's own key order; arrays stay one value (a model's widths read as one setting).
 */
export function flattenConfig(config: unknown, prefix = ''): [string, string][] {
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return prefix ? [[prefix, shown(config)]] : [];
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
    // A setting left unset (null: "resumedFrom null") is not shown, as one that is absent is not.
    if (HIDDEN_KEYS.has(key) || value === undefined || value === null) continue;
    const name = prefix ? `${prefix}.${key}` : key;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) rows.push(...flattenConfig(value, name));
    else rows.push([name, shown(value)]);
  }
  return rows;
}

/** A setting that differs between runs: its value in each run, in the runs' order (null where a run has no such setting). */
export interface ConfigDifference {
  key: string;
  values: (string | null)[];
}

/**
 * A flattened key as Compare lines it up across kinds: a wizard's run holds what it trains under `request.target`
 * and how it measures under `request` (a UI walk saw every setting of an optimisation "differ" from a benchmark's,
 * as "–"), so those read as the benchmark's own `options.batchSize` and `steps`.
 */
function comparableKey(key: string): string {
  return key.replace(/^request\.target\./, '').replace(/^request\./, '');
}

/** The settings whose values are not the same in every run, in the order they first appear. */
export function configDifferences(configs: readonly unknown[]): ConfigDifference[] {
  const maps = configs.map((c) => new Map(flattenConfig(c).map(([k, v]): [string, string] => [comparableKey(k), v])));
  const keys = [...new Set(maps.flatMap((m) => [...m.keys()]))];
  return keys
    .map((key) => ({ key, values: maps.map((m) => m.get(key) ?? null) }))
    .filter((d) => new Set(d.values).size > 1);
}

/** Settings by the end of their path, in words (issue 27: the UI does not show `request.target.spec.family` alone). */
const SETTING_WORDS: [string, string][] = [
  ['spec.family', 'model'],
  ['optimizer.lr', 'learning rate'],
  ['optimizer.name', 'optimizer'],
  ['optimizer.weightDecay', 'weight decay'],
  ['batchSize', 'batch size'],
  ['maxSteps', 'steps at most'],
  ['warmupSteps', 'warm-up steps'],
  ['loaderWorkers', 'loader workers'],
  ['prefetch', 'prefetch depth'],
  ['accumulation', 'gradient accumulation'],
  ['threads', 'CPU threads'],
  ['readFrom', 'read from'],
  ['command', 'command'],
  ['cwd', 'working directory'],
  ['repeat', 'repetitions'],
  ['steps', 'measured steps'],
];

/** A flattened config key as a person reads it: a known setting's name, else the last part of the path split into words. */
export function settingWords(key: string): string {
  const override = /(?:^|\.)overrides\.(.+)$/.exec(key);
  if (override) return `override ${override[1]}`;
  // An environment variable keeps its own name, case and all.
  const env = /(?:^|\.)target\.env\.(.+)$/.exec(key);
  if (env) return `environment ${env[1]}`;
  const known = SETTING_WORDS.find(([end]) => key === end || key.endsWith(`.${end}`));
  if (known) return known[1];
  const last = key.slice(key.lastIndexOf('.') + 1);
  return last.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}
