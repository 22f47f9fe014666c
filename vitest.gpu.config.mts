// The GPU suites on a lent GPU machine (tools/device/run.sh): no Vue plugin, so
// the kit carried there needs neither the Vue compiler nor Babel (test/gpu/
// loads no .vue file); the suites share the GPU, so one file at a time.
import { defineConfig } from 'vitest/config';

import { shared } from './vitest.shared.mjs';

export default defineConfig({ ...shared, test: { ...shared.test, include: ['test/gpu/**/*.test.ts'], maxWorkers: 1 } });
