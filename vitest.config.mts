import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vitest/config';

import { shared } from './vitest.shared.mjs';

export default defineConfig({ ...shared, plugins: [vue()] });
