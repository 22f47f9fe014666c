// Sandboxed preloads cannot require our own modules, so the preload and the
// few contract pieces it uses are bundled into one CommonJS file.
import { build } from 'esbuild';

await build({
  entryPoints: ['src-main/electron/preload.ts'],
  outfile: 'dist/src-main/electron/preload.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'chrome140',
  external: ['electron'],
  sourcemap: true,
  logLevel: 'warning',
});
