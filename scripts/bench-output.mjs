// Output rules every benchmark under bench/ follows: print the table; write
// the JSON only where the user asked (--out PATH, or --save for
// bench/results/<name>.json); and leave nothing behind in the tree or the OS
// temp folder, also when interrupted with Ctrl-C.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The value after `name` in argv, `fallback` when absent; a flag given without a value is an error. */
export function argValue(args, name, fallback) {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const value = args[i + 1];
  if (value === undefined || value.startsWith('--')) usageError(`${name} needs a value`);
  return value;
}

/** A numeric option, refused with its name and value when it is not a positive number. */
export function numberArg(args, name, fallback) {
  const raw = argValue(args, name, undefined);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) usageError(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

function usageError(message) {
  process.stderr.write(`${path.basename(process.argv[1] ?? 'bench')}: ${message}\n`);
  process.exit(2);
}

/**
 * Where the JSON goes: `--out PATH`, `--save` (bench/results/<name>.json), or
 * nowhere. Read when the benchmark starts, so a bad flag fails before the work.
 */
export function benchOutput(args) {
  const out = argValue(args, '--out', undefined);
  const save = args.includes('--save');
  return {
    /** Writes the result where asked, and tells the user where it went or how to keep it. */
    write(name, result) {
      const file = out !== undefined ? path.resolve(out) : save ? path.join(REPO_ROOT, 'bench', 'results', `${name}.json`) : null;
      if (file === null) {
        console.log(`\nnot saved: add --out FILE, or --save for bench/results/${name}.json`);
        return null;
      }
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
      console.log(`\nwrote ${path.relative(process.cwd(), file) || file}`);
      return file;
    },
  };
}

/**
 * A fresh folder under the OS temp dir, removed when the process exits,
 * including on Ctrl-C and SIGTERM (the exit code then says which signal).
 */
export function tempFolder(prefix) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', remove);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: removing ${dir}\n`);
      process.exit(code);
    });
  }
  return dir;
}
