// ESLint rule `trainbench/layer-imports`: reports imports against the layer
// direction, `electron` outside src-main/electron, Node built-ins in browser
// layers, and native `.node` files loaded outside src-main/engine.
import { builtinModules } from 'node:module';
import path from 'node:path';

import { coreFolderCyclesRule, coreLayersRule } from './core-rules.mjs';
import { ALIASES, LAYERS, NO_NODE_BUILTINS, RESTRICTED_MODULES } from './layers.mjs';

const BUILTINS = new Set(builtinModules);

function toPosix(p) {
  return p.split(path.sep).join('/');
}

/** The layer a repo-relative path belongs to, or null for files outside the layers (tests, tools). */
export function layerOf(relPath) {
  const p = toPosix(relPath);
  for (const [name, layer] of Object.entries(LAYERS)) {
    if (p === layer.dir || p.startsWith(`${layer.dir}/`)) return name;
  }
  return null;
}

function targetPath(spec, fileDir, root) {
  for (const [alias, dir] of Object.entries(ALIASES)) {
    if (spec.startsWith(alias)) return dir + spec.slice(alias.length);
  }
  if (spec.startsWith('.')) return toPosix(path.relative(root, path.resolve(fileDir, spec)));
  return null;
}

export const layerImportsRule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports must follow the layer direction of docs/architecture.md' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: {
      upward: '{{from}} may not import {{to}} ("{{spec}}"): imports point down the layers ({{from}} may import {{allowed}})',
      restricted: '"{{spec}}" may only be imported in {{layers}}',
      builtin: '{{from}} runs outside Node and may not import the Node built-in "{{spec}}"',
      native: 'only src-main/engine may load native addons ("{{spec}}")',
    },
  },
  create(context) {
    const root = context.options[0]?.root ?? context.cwd;
    const filename = context.filename;
    const from = layerOf(path.relative(root, filename));
    if (!from) return {};
    const fileDir = path.dirname(filename);

    function check(node, spec) {
      if (typeof spec !== 'string') return;
      if (spec.endsWith('.node') && from !== 'engine') {
        context.report({ node, messageId: 'native', data: { spec } });
        return;
      }
      const bare = spec.replace(/^node:/, '');
      if (!spec.startsWith('.') && !Object.keys(ALIASES).some((a) => spec.startsWith(a))) {
        const allowedIn = RESTRICTED_MODULES[spec.split('/')[0]];
        if (allowedIn && !allowedIn.includes(from)) {
          context.report({ node, messageId: 'restricted', data: { spec, layers: allowedIn.join(', ') } });
        }
        if (NO_NODE_BUILTINS.includes(from) && (spec.startsWith('node:') || BUILTINS.has(bare.split('/')[0]))) {
          context.report({ node, messageId: 'builtin', data: { from, spec } });
        }
        return;
      }
      const target = targetPath(spec, fileDir, root);
      const to = target && layerOf(target);
      if (!to) return;
      const allowed = LAYERS[from].mayImport;
      if (!allowed.includes(to)) {
        context.report({ node, messageId: 'upward', data: { from, to, spec, allowed: allowed.join(', ') } });
      }
    }

    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
      CallExpression: (node) => {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments[0]?.type === 'Literal') {
          check(node, node.arguments[0].value);
        }
      },
    };
  },
};

export default {
  rules: {
    'layer-imports': layerImportsRule,
    'core-layers': coreLayersRule,
    'core-folder-cycles': coreFolderCyclesRule,
  },
};
