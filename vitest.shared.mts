// Settings both vitest configs share: vitest.config.mts (everything) and
// vitest.gpu.config.mts (the GPU suites on a lent machine, without the Vue plugin).
import { fileURLToPath } from 'node:url';

import type { ViteUserConfig } from 'vitest/config';

export const shared = {
  resolve: {
    alias: { '@api': fileURLToPath(new URL('./src-main/api', import.meta.url)) },
  },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The test Pythons (and their torch versions) looked up once, not by each of ~50 files.
    globalSetup: ['./test/helpers/python-setup.ts'],
    // Native and e2e tests start processes; two cores cannot run many at once.
    maxWorkers: 2,
  },
} satisfies ViteUserConfig;
