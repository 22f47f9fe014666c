import { afterEach } from 'vitest';

import { createServices, type Services } from '../../src-main/core/services';
import { HOST_ENTRY, requireBuilt } from './repo';
import { tempDir } from './temp-dir';

/** Real services (real engine host) over a throwaway workspace. */
export async function testServices(env: Record<string, string> = {}): Promise<{ services: Services; cleanup(): Promise<void> }> {
  requireBuilt();
  const ws = tempDir();
  const services = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY, env, restartDelaysMs: [20] } });
  return {
    services,
    async cleanup() {
      await services.dispose();
      ws.cleanup();
    },
  };
}

/**
 * Real services per test, each over its own workspace: whatever a test left running is cancelled and the services
 * disposed after it (a lost cancel would leave a wizard measuring into a removed workspace).
 */
export function servicesPerTest(): (options?: { allowScripts?: boolean }) => Promise<Services> {
  const open: { services: Services; cleanup(): void }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      for (const j of o.services.jobs.list()) await o.services.cancelJob(j.jobId).catch(() => undefined);
      await o.services.dispose();
      o.cleanup();
    }
  });
  return async (options = {}) => {
    requireBuilt();
    const ws = tempDir();
    const services = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY, restartDelaysMs: [20] }, allowScripts: options.allowScripts });
    open.push({ services, cleanup: ws.cleanup });
    return services;
  };
}
