import path from 'node:path';

import { ESLint, RuleTester } from 'eslint';
import { describe, expect, it } from 'vitest';

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

/** The no-restricted-imports messages the project config gives `code` as if it lived at `rel`. */
async function restrictedImports(code: string, rel: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: REPO_ROOT, ignore: false });
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, rel) });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('workspace files only through core/workspace-files.ts', () => {
  it('reports node:fs (and fs/promises) in a service, in serve mode, but not in the module itself or as a type import', async () => {
    expect(await restrictedImports("import { promises as fs } from 'node:fs';\nexport const f = fs;\n", 'src-main/core/reports/new-service.ts')).toEqual([
      expect.stringContaining('core/workspace-files.ts'),
    ]);
    expect(await restrictedImports("import { readFile } from 'fs/promises';\nexport const f = readFile;\n", 'src-main/server/new-route.ts')).toHaveLength(1);
    expect(await restrictedImports("import { promises as fs } from 'node:fs';\nexport const f = fs;\n", 'src-main/core/workspace-files.ts')).toEqual([]);
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
