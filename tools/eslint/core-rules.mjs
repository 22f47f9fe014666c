// ESLint rules for the inside of src-main/core (docs/architecture.md):
// - `trainbench/core-layers`: a core file imports core files of its own inner layer or of a lower
//   one (CORE_LAYERS in layers.mjs), and every core folder is in one inner layer;
// - `trainbench/core-folder-cycles`: the core folders' import graph (folder -> folder, subfolders
//   counting as their top folder) has no cycle, even between folders of one layer.
// Imports that leave src-main/core (api/, engine/, ...) are `trainbench/layer-imports`' business.
import fs from 'node:fs';
import path from 'node:path';

import { CORE_LAYERS, LAYERS } from './layers.mjs';

const CORE_DIR = LAYERS.core.dir;
const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts'];
/** What TypeScript tries for an extensionless specifier before it tries a folder's index. */
const FILE_CANDIDATES = ['.ts', '.tsx', '.d.ts', '.mts', '.cts', '.js', '.mjs', '.cjs'];

function toPosix(p) {
  return p.split(path.sep).join('/');
}

function normaliseFolder(folder) {
  const f = toPosix(folder).replace(/^\.\/?/, '').replace(/\/+$/, '');
  return f === '' ? '.' : f;
}

/** Declared folders, longest first so that a declared subfolder wins over its parent. */
const DECLARED = CORE_LAYERS.flatMap((layer, index) => layer.folders.map((folder) => ({ folder: normaliseFolder(folder), layer: layer.name, index }))).sort(
  (a, b) => b.folder.length - a.folder.length,
);

/** How a core folder is named in messages: core for the root, core/<folder> otherwise. */
function display(folder) {
  return folder === '.' ? 'core' : `core/${folder}`;
}

/** The top folder of a file path relative to src-main/core: its first segment, '.' for a file directly in core. */
export function topFolderOf(relFile) {
  const slash = relFile.indexOf('/');
  return slash < 0 ? '.' : relFile.slice(0, slash);
}

/**
 * The inner layer of a file path relative to src-main/core: { folder, layer, index } with the
 * declared folder that holds it, or { folder, layer: null } (folder: its top folder) when no layer
 * declares its folder.
 */
export function coreLayerOf(relFile) {
  const dir = path.posix.dirname(relFile);
  for (const d of DECLARED) {
    if (d.folder === '.' ? dir === '.' : dir === d.folder || dir.startsWith(`${d.folder}/`)) return d;
  }
  return { folder: topFolderOf(relFile), layer: null, index: -1 };
}

/**
 * The file a relative specifier points at, relative to `coreAbs` (posix), or null when it leaves
 * src-main/core. An extensionless specifier that names no file but a folder stands for the folder's
 * index file (so '../workspace' is workspace.ts while that file exists, workspace/index.ts after).
 */
function resolveInCore(spec, fileDir, coreAbs) {
  if (!spec.startsWith('.')) return null;
  const abs = path.resolve(fileDir, spec);
  const rel = toPosix(path.relative(coreAbs, abs));
  if (rel === '') return 'index.ts';
  if (rel.startsWith('../') || rel === '..' || path.isAbsolute(rel)) return null;
  if (!/\.[cm]?[jt]sx?$/.test(rel) && !FILE_CANDIDATES.some((ext) => fs.existsSync(abs + ext)) && isDirectory(abs)) return `${rel}/index.ts`;
  return rel;
}

function isDirectory(abs) {
  try {
    return fs.statSync(abs).isDirectory();
  } catch {
    return false;
  }
}

/** The AST visitors that call `check(node, specifier)` for every import of a module in a file. */
function importVisitors(check) {
  const literal = (node) => (node && node.type === 'Literal' && typeof node.value === 'string' ? node.value : null);
  const visit = (node, spec) => spec !== null && check(node, spec);
  return {
    ImportDeclaration: (node) => visit(node, literal(node.source)),
    ExportNamedDeclaration: (node) => node.source && visit(node, literal(node.source)),
    ExportAllDeclaration: (node) => visit(node, literal(node.source)),
    ImportExpression: (node) => visit(node, literal(node.source)),
    // `import('../x').T` in a type, `import x = require('../x')`, `require('../x')`.
    TSImportType: (node) => {
      // typescript-eslint 8.x: `source` (a string literal); older: `argument` / `parameter` (a literal type).
      const arg = node.source ?? node.argument ?? node.parameter;
      visit(node, literal(arg?.type === 'TSLiteralType' ? arg.literal : arg));
    },
    TSExternalModuleReference: (node) => visit(node, literal(node.expression)),
    CallExpression: (node) => {
      if (node.callee.type === 'Identifier' && node.callee.name === 'require') visit(node, literal(node.arguments[0]));
    },
  };
}

function coreOptions(context) {
  const root = context.options[0]?.root ?? context.cwd;
  const coreAbs = path.join(root, CORE_DIR);
  const rel = toPosix(path.relative(coreAbs, context.filename));
  const inCore = rel !== '' && !rel.startsWith('../') && !path.isAbsolute(rel);
  return { root, coreAbs, rel: inCore ? rel : null };
}

const OPTIONS_SCHEMA = [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }];

export const coreLayersRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Inside src-main/core, imports follow the inner layers of docs/architecture.md (CORE_LAYERS)' },
    schema: OPTIONS_SCHEMA,
    messages: {
      upward:
        '{{from}} ({{fromLayer}}) may not import {{to}} ({{toLayer}}): inside core, imports point down ({{fromLayer}} may import {{allowed}})',
      undeclared:
        '{{folder}} is in no inner layer of core: add it to CORE_LAYERS in tools/eslint/layers.mjs (layers top to bottom: {{layers}})',
    },
  },
  create(context) {
    const { coreAbs, rel } = coreOptions(context);
    if (!rel) return {};
    const from = coreLayerOf(rel);
    if (!from.layer) {
      return {
        Program: (node) =>
          context.report({
            node,
            loc: { line: 1, column: 0 },
            messageId: 'undeclared',
            data: { folder: display(from.folder), layers: CORE_LAYERS.map((l) => l.name).join(', ') },
          }),
      };
    }
    const allowed = CORE_LAYERS.slice(from.index).map((l) => l.name).join(', ');
    const fileDir = path.dirname(context.filename);
    return importVisitors((node, spec) => {
      const target = resolveInCore(spec, fileDir, coreAbs);
      if (target === null) return;
      const to = coreLayerOf(target);
      // A folder in no layer is reported in its own files; an import of it is not judged.
      if (!to.layer || to.index >= from.index) return;
      context.report({
        node,
        messageId: 'upward',
        data: { from: display(from.folder), fromLayer: from.layer, to: display(to.folder), toLayer: to.layer, allowed },
      });
    });
  },
};

// ---------------------------------------------------------------------------------------------
// Folder cycles

/**
 * The module specifiers of a TypeScript source: `import ... from '...'`, `export ... from '...'`,
 * `import '...'`, `import('...')` (also in types) and `require('...')`; type-only imports included.
 * Statements are only recognised at the start of a line or after `;` or `}`, so comments that talk
 * about imports are not taken for them.
 */
const SPECIFIER_RES = [
  /(?:^|[;}])[ \t]*(?:import|export)(?![\w$])[\w$*{},\s]*?(?<![\w$])from\s*(['"])([^'"\n]+)\1/gm,
  /(?:^|[;}])[ \t]*import\s*(['"])([^'"\n]+)\1/gm,
  /(?<![\w$.])(?:import|require)\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
];

export function scanSpecifiers(text) {
  const specs = [];
  for (const re of SPECIFIER_RES) {
    for (const m of text.matchAll(re)) specs.push(m[2]);
  }
  return specs;
}

/** Per lint process: the scanned core of each root, { files: Map<relFile, Set<folder>> }. */
const graphCache = new Map();

/** Forget the scanned core folders (for tests that rewrite a tree under one root). */
export function clearCoreGraphCache() {
  graphCache.clear();
}

function listSources(dirAbs, relDir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dirAbs, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) listSources(path.join(dirAbs, entry.name), rel, out);
    else if (entry.isFile() && SOURCE_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) out.push(rel);
  }
  return out;
}

/** The other core folders a file imports, in the order of its first import of each. */
function foldersImported(relFile, specs, coreAbs) {
  const own = topFolderOf(relFile);
  const fileDir = path.join(coreAbs, path.dirname(relFile));
  const folders = new Set();
  for (const spec of specs) {
    const target = resolveInCore(spec, fileDir, coreAbs);
    if (target === null) continue;
    const folder = topFolderOf(target);
    if (folder !== own) folders.add(folder);
  }
  return folders;
}

/** The core of `root` as scanned from disk, once per process. */
export function coreGraph(root) {
  const key = path.resolve(root);
  let graph = graphCache.get(key);
  if (!graph) {
    const coreAbs = path.join(key, CORE_DIR);
    const files = new Map();
    for (const rel of listSources(coreAbs, '', [])) {
      const text = fs.readFileSync(path.join(coreAbs, rel), 'utf8');
      files.set(rel, foldersImported(rel, scanSpecifiers(text), coreAbs));
    }
    graph = { files };
    graphCache.set(key, graph);
  }
  return graph;
}

/** Folder -> the folders it imports, from the scanned files with `relFile`'s own imports replaced by `own`. */
function folderEdges(graph, relFile, own) {
  const edges = new Map();
  const add = (file, folders) => {
    const from = topFolderOf(file);
    if (!edges.has(from)) edges.set(from, new Set());
    for (const to of folders) edges.get(from).add(to);
  };
  for (const [file, folders] of graph.files) if (file !== relFile) add(file, folders);
  add(relFile, own);
  return edges;
}

/** The shortest folder path from `start` to `goal` (both included), or null. */
function shortestPath(edges, start, goal) {
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const folder = queue.shift();
    if (folder === goal) {
      const route = [];
      for (let f = goal; f !== null; f = previous.get(f)) route.unshift(f);
      return route;
    }
    for (const next of edges.get(folder) ?? []) {
      if (!previous.has(next)) {
        previous.set(next, folder);
        queue.push(next);
      }
    }
  }
  return null;
}

/** How a folder is named in a cycle: its name, `(root)` for the files directly in core. */
function cycleName(folder) {
  return folder === '.' ? '(root)' : folder;
}

export const coreFolderCyclesRule = {
  meta: {
    type: 'problem',
    docs: { description: 'The folders of src-main/core import each other without cycles (docs/architecture.md)' },
    schema: OPTIONS_SCHEMA,
    messages: {
      cycle: 'core folder cycle: {{cycle}} (folders may import each other, never round in a circle: break the import of {{next}} or another on the cycle)',
    },
  },
  create(context) {
    const { root, coreAbs, rel } = coreOptions(context);
    if (!rel) return {};
    const own = topFolderOf(rel);
    const fileDir = path.dirname(context.filename);
    /** Folder -> the file's first import of it, in source order. */
    const firstImport = new Map();
    return {
      ...importVisitors((node, spec) => {
        const target = resolveInCore(spec, fileDir, coreAbs);
        if (target === null) return;
        const folder = topFolderOf(target);
        if (folder !== own && !firstImport.has(folder)) firstImport.set(folder, node);
      }),
      'Program:exit': () => {
        if (firstImport.size === 0) return;
        // The file as linted stands in for its copy on disk (an editor's buffer, lintText).
        const edges = folderEdges(coreGraph(root), rel, new Set(firstImport.keys()));
        const reports = [];
        for (const [next, node] of firstImport) {
          const back = shortestPath(edges, next, own);
          if (back) reports.push({ node, next, cycle: [own, ...back] });
        }
        reports.sort((a, b) => a.node.range[0] - b.node.range[0]);
        for (const { node, next, cycle } of reports) {
          context.report({ node, messageId: 'cycle', data: { cycle: cycle.map(cycleName).join(' -> '), next: next === '.' ? 'core (root)' : display(next) } });
        }
      },
    };
  },
};
