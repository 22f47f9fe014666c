import { fileURLToPath } from 'node:url';

import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('./src-renderer', import.meta.url)),
  // Relative asset paths: the same build loads from file:// (Electron) and http:// (serve).
  base: './',
  plugins: [vue()],
  resolve: {
    alias: { '@api': fileURLToPath(new URL('./src-main/api', import.meta.url)) },
  },
  build: {
    outDir: fileURLToPath(new URL('./dist/renderer', import.meta.url)),
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
  },
});
