// The layers of docs/architecture.md and which may import which. Imports point down only.
export const LAYERS = {
  renderer: { dir: 'src-renderer', mayImport: ['renderer', 'api'] },
  api: { dir: 'src-main/api', mayImport: ['api'] },
  electron: { dir: 'src-main/electron', mayImport: ['electron', 'api', 'core', 'engine'] },
  server: { dir: 'src-main/server', mayImport: ['server', 'api', 'core', 'engine'] },
  // `trainbench serve` is the CLI's door into serve mode, so the CLI may start the server.
  cli: { dir: 'src-main/cli', mayImport: ['cli', 'api', 'core', 'engine', 'server'] },
  core: { dir: 'src-main/core', mayImport: ['core', 'api', 'engine'] },
  engine: { dir: 'src-main/engine', mayImport: ['engine', 'api'] },
};

/** Import aliases and the folder they stand for. */
export const ALIASES = { '@api/': 'src-main/api/' };

/** Bare modules only one layer may use. */
export const RESTRICTED_MODULES = {
  electron: ['electron'],
};

/** Layers that must stay free of Node built-ins (they run in a browser, or anywhere). */
export const NO_NODE_BUILTINS = ['renderer', 'api'];

/**
 * The inner layers of src-main/core, top to bottom (docs/architecture.md). A core file may import
 * core files of its own layer or of a layer below it (rule `trainbench/core-layers`); between the
 * folders of one layer, imports may go either way but never round in a circle (rule
 * `trainbench/core-folder-cycles`). Folders are relative to src-main/core and hold their subfolders
 * (datasets holds datasets/importers); '' is the files directly in src-main/core. Every core folder
 * must be in one layer: a new folder is reported until it is placed here.
 */
export const CORE_LAYERS = [
  // The composition root: wires the services together (services.ts, api-router.ts).
  { name: 'root', folders: [''] },
  { name: 'capabilities', folders: ['optimise', 'batch-size', 'benchmarks', 'training', 'check', 'reports', 'downloads'] },
  { name: 'runners', folders: ['targets', 'knobs'] },
  { name: 'drivers', folders: ['script', 'nodes', 'datasets'] },
  { name: 'base', folders: ['workspace', 'telemetry', 'stats', 'jobs', 'common'] },
];
