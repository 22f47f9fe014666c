// The layers of DESIGN.md and which may import which. Imports point down only.
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
