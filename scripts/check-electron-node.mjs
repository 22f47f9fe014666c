#!/usr/bin/env node
// The CLI and serve mode run on Node ^20.19 || >=22.12 (package.json engines),
// but Electron's own tooling (electron, @electron/get, @electron/rebuild,
// node-abi) needs a newer Node. `npm run dist:app` runs this first, so a
// too-old Node is one clear line, not a failure deep inside electron-builder. The range is read from the installed electron package, so
// it is never stale.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const parse = (v) => v.replace(/^v/, '').split('.').map((n) => Number(n) || 0);
const compare = (a, b) => {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
};

/**
 * Whether `version` satisfies an npm engines range made of `>=X.Y.Z` and
 * `^X.Y.Z` alternatives joined by `||` (the forms Electron's packages use);
 * null for any other form, so the caller can say it could not tell.
 */
export function satisfiesRange(version, range) {
  const v = parse(version);
  let known = true;
  const ok = range.split('||').some((alt) => {
    const m = /^\s*(>=|\^)\s*v?(\d+(?:\.\d+){0,2})\s*$/.exec(alt);
    if (!m) {
      known = false;
      return false;
    }
    const min = parse(m[2]);
    return compare(v, min) >= 0 && (m[1] === '>=' || v[0] === min[0]);
  });
  return ok ? true : known ? false : null;
}

function main() {
  let range;
  try {
    range = JSON.parse(readFileSync(path.join(root, 'node_modules', 'electron', 'package.json'), 'utf8')).engines?.node;
  } catch {
    console.error('Building the desktop app needs the electron package: run "npm ci" (with dev dependencies) first.');
    process.exit(1);
  }
  if (!range) return;
  const ok = satisfiesRange(process.version, range);
  if (ok === false) {
    console.error(
      `Building the desktop app needs Node ${range} (Electron's tooling asks for it); this is Node ${process.version}. ` +
        'The CLI and serve mode work on this Node; for the desktop app, install a newer Node (e.g. the current LTS).',
    );
    process.exit(1);
  }
  if (ok === null) console.warn(`check-electron-node: cannot read electron's engines range ${JSON.stringify(range)}; not checked`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
