import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ESLint, Linter, RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';

import { coreFolderCyclesRule, coreLayersRule } from '../../tools/eslint/core-rules.mjs';
import { layerImportsRule } from '../../tools/eslint/layer-imports-rule.mjs';
import { REPO_ROOT } from '../helpers/repo';

const ruleTester = new RuleTester({ languageOptions: { ecmaVersion: 2022, sourceType: 'module' } });
const file = (rel: string) => path.join(REPO_ROOT, rel);
const options = [{ root: REPO_ROOT }];

describe('trainbench/layer-imports', () => {
  it('passes imports that point down and fires on each kind of violation', () => {
    ruleTester.run('layer-imports', layerImportsRule as never, {
      valid: [
        { code: "import { x } from '../api/errors';", filename: file('src-main/core/a.ts'), options },
        { code: "import { x } from '../engine/supervisor';", filename: file('src-main/core/a.ts'), options },
        { code: "import { x } from '../core/services';", filename: file('src-main/server/a.ts'), options },
        { code: "import { app } from 'electron';", filename: file('src-main/electron/main.ts'), options },
        { code: "import { x } from '@api/errors';", filename: file('src-renderer/a.ts'), options },
        { code: "import fs from 'node:fs';", filename: file('src-main/engine/a.ts'), options },
        { code: "const a = require('./x.node');", filename: file('src-main/engine/a.ts'), options },
        { code: "import { x } from '../../src-main/core/services';", filename: file('test/unit/a.ts'), options },
      ],
      invalid: [
        { code: "import { x } from '../core/services';", filename: file('src-main/engine/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "import { x } from '../server/serve';", filename: file('src-main/core/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "import { x } from '../electron/main';", filename: file('src-main/server/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "import { x } from '../core/x';", filename: file('src-main/api/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "import { x } from '../src-main/core/services';", filename: file('src-renderer/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "import { app } from 'electron';", filename: file('src-main/core/a.ts'), options, errors: [{ messageId: 'restricted' }] },
        { code: "import fs from 'node:fs';", filename: file('src-renderer/a.ts'), options, errors: [{ messageId: 'builtin' }] },
        { code: "import path from 'path';", filename: file('src-main/api/a.ts'), options, errors: [{ messageId: 'builtin' }] },
        { code: "const a = require('../../build/Release/x.node');", filename: file('src-main/core/a.ts'), options, errors: [{ messageId: 'native' }] },
        { code: "export * from '../core/services';", filename: file('src-main/engine/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "const m = import('../cli/main');", filename: file('src-main/server/a.ts'), options, errors: [{ messageId: 'upward' }] },
      ],
    });
  });

  it('is switched on in the project config (the fixture is reported)', async () => {
    const eslint = new ESLint({ cwd: REPO_ROOT, ignore: false });
    const fixture = path.join(REPO_ROOT, 'test/fixtures/layer-violations/src-main/engine/imports-core.ts');
    // Lint the fixture's text as if it lived in the real engine folder.
    const { readFileSync } = await import('node:fs');
    const [result] = await eslint.lintText(readFileSync(fixture, 'utf8'), {
      filePath: path.join(REPO_ROOT, 'src-main/engine/imports-core.ts'),
    });
    const messages = result.messages.filter((m) => m.ruleId === 'trainbench/layer-imports');
    expect(messages).toHaveLength(1);
    expect(messages[0].message).toContain('engine may not import core');
  });
});

const ts = { parser: tseslint.parser };
const upward = (from: string, fromLayer: string, to: string, toLayer: string, allowed: string) =>
  `${from} (${fromLayer}) may not import ${to} (${toLayer}): inside core, imports point down (${fromLayer} may import ${allowed})`;

describe('trainbench/core-layers', () => {
  it('lets core files import their own layer and the layers below, and reports imports up and folders in no layer', () => {
    ruleTester.run('core-layers', coreLayersRule as never, {
      valid: [
        // Same layer (runners), one layer down (drivers), the bottom (base), the same folder.
        { code: "import { x } from '../targets/x';", filename: file('src-main/core/knobs/a.ts'), options },
        { code: "import { x } from '../script/x';", filename: file('src-main/core/knobs/a.ts'), options },
        { code: "import { x } from '../stats/medians';\nimport { y } from './y';", filename: file('src-main/core/knobs/a.ts'), options },
        { code: "import { x } from '../batch-size/x';", filename: file('src-main/core/optimise/a.ts'), options },
        // A capability importing stats.
        { code: "import { x } from '../stats/medians';", filename: file('src-main/core/reports/a.ts'), options },
        { code: "import type { X } from '../stats/medians';", filename: file('src-main/core/optimise/a.ts'), options, languageOptions: ts },
        // The root imports anything in core.
        {
          code: "import { a } from './optimise/x';\nimport { b } from './knobs/x';\nimport { c } from './datasets/importers/x';\nimport { d } from './jobs/x';\nimport { e } from './app-info';",
          filename: file('src-main/core/services.ts'),
          options,
        },
        // A subfolder is its folder: datasets/importers is drivers.
        { code: "import { x } from '../../script/x';\nimport { y } from '../x';", filename: file('src-main/core/datasets/importers/a.ts'), options },
        { code: "import { x } from '../importers/x';", filename: file('src-main/core/datasets/a.ts'), options },
        // Outside core: the outer rule's business.
        { code: "import { x } from '../../api/errors';\nimport { y } from '../../engine/supervisor';", filename: file('src-main/core/stats/a.ts'), options },
        { code: "import { x } from '../core/optimise/x';", filename: file('src-main/server/a.ts'), options },
        { code: "import { x } from '../../src-main/core/optimise/x';", filename: file('test/unit/a.ts'), options },
      ],
      invalid: [
        {
          code: "import { x } from '../optimise/x';",
          filename: file('src-main/core/knobs/a.ts'),
          options,
          errors: [{ message: upward('core/knobs', 'runners', 'core/optimise', 'capabilities', 'runners, drivers, base') }],
        },
        {
          code: "import { x } from '../targets/x';",
          filename: file('src-main/core/stats/a.ts'),
          options,
          errors: [{ message: upward('core/stats', 'base', 'core/targets', 'runners', 'base') }],
        },
        {
          code: "import { x } from '../event-hub';",
          filename: file('src-main/core/jobs/a.ts'),
          options,
          errors: [{ message: upward('core/jobs', 'base', 'core', 'root', 'base') }],
        },
        {
          code: "import { x } from '../../optimise/x';",
          filename: file('src-main/core/datasets/importers/a.ts'),
          options,
          errors: [{ message: upward('core/datasets', 'drivers', 'core/optimise', 'capabilities', 'drivers, base') }],
        },
        // Type-only imports, re-exports and dynamic imports count.
        { code: "import type { X } from '../optimise/x';", filename: file('src-main/core/script/a.ts'), options, languageOptions: ts, errors: [{ messageId: 'upward' }] },
        { code: "export type X = import('../knobs/x').X;", filename: file('src-main/core/script/a.ts'), options, languageOptions: ts, errors: [{ messageId: 'upward' }] },
        { code: "export * from '../optimise/x';", filename: file('src-main/core/targets/a.ts'), options, errors: [{ messageId: 'upward' }] },
        { code: "const m = import('../reports/x');", filename: file('src-main/core/telemetry/a.ts'), options, errors: [{ messageId: 'upward' }] },
        // A folder in no layer: reported once per file, whatever it imports.
        {
          code: "import { x } from '../optimise/x';\nimport { y } from '../stats/y';",
          filename: file('src-main/core/new-folder/sub/a.ts'),
          options,
          errors: [{ line: 1, message: /^core\/new-folder is in no inner layer of core: add it to CORE_LAYERS in tools\/eslint\/layers\.mjs/ }],
        },
      ],
    });
  });

  it('reads an extensionless import of a folder as its index, of a file as the file', () => {
    const root = fakeRepo({ 'jobs/a.ts': '', 'workspace/index.ts': '', 'event-hub.ts': '' });
    const lint = (code: string) => lintWith(coreLayersRule, root, code, path.join(root, 'src-main/core/jobs/a.ts'));
    expect(lint("import { w } from '../workspace';")).toEqual([]);
    expect(lint("import { h } from '../event-hub';").map((m) => m.message)).toEqual([upward('core/jobs', 'base', 'core', 'root', 'base')]);
    writeFileSync(path.join(root, 'src-main/core/workspace.ts'), '');
    // TypeScript prefers workspace.ts to workspace/index.ts, and so does the rule.
    expect(lint("import { w } from '../workspace';")).toHaveLength(1);
  });

  it('is switched on in the project config (the fixture is reported)', async () => {
    const eslint = new ESLint({ cwd: REPO_ROOT, ignore: false });
    const fixture = path.join(REPO_ROOT, 'test/fixtures/layer-violations/src-main/core/knobs/imports-optimise.ts');
    const [result] = await eslint.lintText(readFileSync(fixture, 'utf8'), { filePath: path.join(REPO_ROOT, 'src-main/core/knobs/imports-optimise.ts') });
    const messages = result.messages.filter((m) => m.ruleId === 'trainbench/core-layers');
    expect(messages.map((m) => m.message)).toEqual([upward('core/knobs', 'runners', 'core/optimise', 'capabilities', 'runners, drivers, base')]);
  });
});

const tempRoots: string[] = [];
afterAll(() => {
  for (const root of tempRoots) rmSync(root, { recursive: true, force: true });
});

/** A fresh repository root in a temp folder whose src-main/core holds `files` (paths relative to core). */
function fakeRepo(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'trainbench-core-'));
  tempRoots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    const abs = path.join(root, 'src-main/core', rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, text);
  }
  return root;
}

/** The core-folder-cycles messages for the file `rel` of the fake repository at `root`, linted as it is on disk. */
function cycleMessages(root: string, rel: string) {
  const abs = path.join(root, 'src-main/core', rel);
  return lintWith(coreFolderCyclesRule, root, readFileSync(abs, 'utf8'), abs).map(({ message, line }) => ({ message, line }));
}

/** The messages `rule` (with the option `root`) gives `code` as the TypeScript file `abs`. */
function lintWith(rule: unknown, root: string, code: string, abs: string) {
  return new Linter({ configType: 'flat', cwd: root }).verify(
    code,
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser as never },
      plugins: { t: { rules: { r: rule as never } } },
      rules: { 't/r': ['error', { root }] },
    },
    abs,
  );
}

describe('trainbench/core-folder-cycles', () => {
  it('reports a cycle between two core folders on each file that closes it, naming the cycle', () => {
    const root = fakeRepo({
      'a/x.ts': "import { y } from '../b/y';\nimport { w } from '../b/w';\nexport const x = y + w;\n",
      // A type-only import closes the cycle as well.
      'b/y.ts': "import type { X } from '../a/x';\nexport const y = 1 as X;\n",
      'b/w.ts': 'export const w = 2;\n',
    });
    expect(cycleMessages(root, 'a/x.ts')).toEqual([{ line: 1, message: expect.stringMatching(/^core folder cycle: a -> b -> a \(/) }]);
    expect(cycleMessages(root, 'b/y.ts')).toEqual([{ line: 1, message: expect.stringMatching(/^core folder cycle: b -> a -> b \(/) }]);
    // b/w.ts is in a folder on the cycle but imports nothing: the files that close the cycle are reported.
    expect(cycleMessages(root, 'b/w.ts')).toEqual([]);
  });

  it('follows subfolders, folder indexes, re-exports and dynamic imports round a longer cycle', () => {
    const root = fakeRepo({
      'a/sub/x.ts': "import './helper';\nimport { y } from '../../b/y';\nexport const x = y;\n",
      'a/sub/helper.ts': '',
      'a/index.ts': "export * from './sub/x';\n",
      'b/y.ts': "export const y = async () => (await import('../c/z')).z;\n",
      'c/z.ts': "export { x as z } from '../a';\n",
      'services.ts': "import { x } from './a';\nimport { y } from './b/y';\nexport const s = [x, y];\n",
    });
    expect(cycleMessages(root, 'a/sub/x.ts')).toEqual([{ line: 2, message: expect.stringContaining('core folder cycle: a -> b -> c -> a') }]);
    expect(cycleMessages(root, 'c/z.ts')).toEqual([{ line: 1, message: expect.stringContaining('core folder cycle: c -> a -> b -> c') }]);
    // The root imports the cycle but is not on it.
    expect(cycleMessages(root, 'services.ts')).toEqual([]);
  });

  it('passes an acyclic tree, imports within one folder and imports that leave core', () => {
    const root = fakeRepo({
      'a/x.ts': "import { y } from '../b/y';\nimport { z } from '../c/z';\nimport { w } from './w';\nexport const x = [y, z, w];\n",
      'a/w.ts': "import { x } from './x';\nexport const w = x;\n",
      'b/y.ts': "import { z } from '../c/z';\nimport { e } from '../../api/errors';\nexport const y = [z, e];\n",
      'c/z.ts': "import { s } from '../../engine/supervisor';\nexport const z = s;\n",
      'services.ts': "import { x } from './a/x';\nexport const s = x;\n",
    });
    for (const rel of ['a/x.ts', 'a/w.ts', 'b/y.ts', 'c/z.ts', 'services.ts']) expect(cycleMessages(root, rel)).toEqual([]);
  });

  it('judges the file as linted, not its copy on disk', () => {
    const root = fakeRepo({ 'a/x.ts': 'export const x = 1;\n', 'b/y.ts': "import { x } from '../a/x';\nexport const y = x;\n" });
    const abs = path.join(root, 'src-main/core/a/x.ts');
    const lint = (code: string) => lintWith(coreFolderCyclesRule, root, code, abs);
    expect(lint("import { y } from '../b/y';\nexport const x = y;\n").map((m) => m.message)).toEqual([expect.stringContaining('core folder cycle: a -> b -> a')]);
    expect(lint('export const x = 1;\n')).toEqual([]);
  });

  it('is switched on in the project config', async () => {
    const eslint = new ESLint({ cwd: REPO_ROOT, ignore: false });
    const config = await eslint.calculateConfigForFile(path.join(REPO_ROOT, 'src-main/core/optimise/a.ts'));
    expect(config.rules['trainbench/core-folder-cycles']).toEqual([2, { root: expect.any(String) }]);
  });
});

/** The no-restricted-imports messages the project config gives `code` as if it lived at `rel`. */
async function restrictedImports(code: string, rel: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT, ignore: false });
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, rel) });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('workspace files only through core/workspace/workspace-files.ts', () => {
  it('reports node:fs (and fs/promises) in a service, in serve mode, but not in the module itself or as a type import', async () => {
    expect(await restrictedImports("import { promises as fs } from 'node:fs';\nexport const f = fs;\n", 'src-main/core/reports/new-service.ts')).toEqual([
      expect.stringContaining('core/workspace/workspace-files.ts'),
    ]);
    expect(await restrictedImports("import { readFile } from 'fs/promises';\nexport const f = readFile;\n", 'src-main/server/new-route.ts')).toHaveLength(1);
    expect(await restrictedImports("import { promises as fs } from 'node:fs';\nexport const f = fs;\n", 'src-main/core/workspace/workspace-files.ts')).toEqual([]);
    expect(await restrictedImports("import type { FileHandle } from 'node:fs/promises';\nexport type F = FileHandle;\n", 'src-main/core/datasets/new.ts')).toEqual([]);
  });
});

describe('renderer: stores, composables and view models never import components', () => {
  it('reports a component or a module under components/ imported by a store, and lets components import stores', async () => {
    expect(await restrictedImports("import { x } from '../components/optimise/helpers';\nexport const y = x;\n", 'src-renderer/stores/new-store.ts')).toEqual([
      expect.stringContaining('src-renderer/view-models/'),
    ]);
    expect(await restrictedImports("import Card from '../components/jobs/JobsIndicator.vue';\nexport const y = Card;\n", 'src-renderer/composables/useNew.ts')).toHaveLength(1);
    expect(await restrictedImports("import { x } from '../view-models/optimise-form';\nexport const y = x;\n", 'src-renderer/stores/new-store.ts')).toEqual([]);
    expect(await restrictedImports("import { useJobsStore } from '../../stores/jobs';\nexport const y = useJobsStore;\n", 'src-renderer/components/jobs/helper.ts')).toEqual([]);
  });
});
