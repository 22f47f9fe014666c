#!/usr/bin/env node
// Prints the node_modules folders that the named packages need (dependencies,
// optional dependencies and required peers, recursively), one per line: what the GPU
// machine must be given to run vitest, the CLI and the benchmarks. `--without
// NAME` leaves a package and what only it needs out (vite's lazily imported
// lightningcss: nothing there compiles CSS).
//   closure.mjs <node_modules> [--without NAME]... NAME...
import fs from 'node:fs';
import path from 'node:path';

const modules = path.resolve(process.argv[2]);
const names = [];
const without = new Set();
for (let i = 3; i < process.argv.length; i++) {
  if (process.argv[i] === '--without') without.add(process.argv[++i]);
  else names.push(process.argv[i]);
}
const seen = new Set();
function visit(name) {
  if (seen.has(name) || without.has(name)) return;
  const manifest = path.join(modules, name, 'package.json');
  if (!fs.existsSync(manifest)) return; // an optional dependency for another platform
  seen.add(name);
  const p = JSON.parse(fs.readFileSync(manifest, 'utf8'));
  // Optional peers (lightningcss, sass, ... for vite) are features nobody here uses.
  const peers = Object.keys(p.peerDependencies ?? {}).filter((d) => !p.peerDependenciesMeta?.[d]?.optional);
  for (const dep of [...Object.keys({ ...p.dependencies, ...p.optionalDependencies }), ...peers]) visit(dep);
}
for (const name of names) visit(name);
process.stdout.write([...seen].sort().join('\n') + '\n');
