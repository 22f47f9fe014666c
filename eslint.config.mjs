import { fileURLToPath } from 'node:url';

import js from '@eslint/js';
import globals from 'globals';
import pluginVue from 'eslint-plugin-vue';
import tseslint from 'typescript-eslint';

import trainbench from './tools/eslint/layer-imports-rule.mjs';

const root = fileURLToPath(new URL('.', import.meta.url));

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'build-*/**', '.venv*/**', 'node_modules/**', 'test-results/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...pluginVue.configs['flat/recommended'],
  {
    files: ['**/*.vue'],
    languageOptions: { parserOptions: { parser: tseslint.parser } },
  },
  {
    files: ['**/*.{ts,mts,mjs,js,vue}'],
    plugins: { trainbench },
    rules: {
      'trainbench/layer-imports': ['error', { root }],
      'trainbench/core-layers': ['error', { root }],
      'trainbench/core-folder-cycles': ['error', { root }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'vue/multi-word-component-names': 'off',
      'vue/max-attributes-per-line': 'off',
      'vue/singleline-html-element-content-newline': 'off',
      'vue/html-self-closing': 'off',
    },
  },
  {
    // A workspace is shared and copied between rigs: its files are data, never a way out. The
    // services touch them only through core/workspace/workspace-files.ts (no links, no FIFOs, size caps,
    // temp-file writes); the files below read what is not the workspace's, each for the reason given.
    files: ['src-main/core/**/*.ts', 'src-main/server/**/*.ts'],
    ignores: [
      'src-main/core/workspace/workspace-files.ts', // the one way in
      'src-main/core/workspace/atomic-write.ts', // its temp-file writer
      'src-main/core/workspace/held-folder.ts', // holds the folders written into open, never through a link
      'src-main/core/workspace/workspace.ts', // creates the root the user chose; confines by lstat and realpath
      'src-main/core/common/build-info.ts', // the app's own package.json and commit
      'src-main/core/telemetry/process-group.ts', // /proc
      'src-main/core/telemetry/host-sampler.ts', // /proc
      'src-main/core/telemetry/conditions.ts', // /proc
      // Source files to import: confined by DatasetService.confine (anywhere for the CLI), regular files only.
      'src-main/core/datasets/importers/**',
      'src-main/core/datasets/fingerprint.ts',
      'src-main/core/datasets/fashion-mnist.ts', // whether Debian's dataset folder holds its four files
      'src-main/core/telemetry/find-nvidia-smi.ts', // the PATH's nvidia-smi
      'src-main/server/static-files.ts', // the app's built renderer
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['fs', 'node:fs', 'fs/promises', 'node:fs/promises'].map((name) => ({
            name,
            allowTypeImports: true,
            message: 'workspace files go through core/workspace/workspace-files.ts (links, FIFOs, size caps, temp-file writes)',
          })),
        },
      ],
    },
  },
  {
    // State lives below the views: stores and composables never import components (issue 25). Logic
    // that both need (form values, past runs, report rendering) lives in src-renderer/view-models/.
    files: ['src-renderer/stores/**/*.ts', 'src-renderer/composables/**/*.ts', 'src-renderer/view-models/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/components/**', '*.vue'], message: 'stores, composables and view models do not import components: move shared logic to src-renderer/view-models/' }] }],
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.mjs', 'tools/**/*.mjs', 'bench/**/*.mjs', 'test/**/*.mjs', '*.mjs', '*.mts'],
    languageOptions: { globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
