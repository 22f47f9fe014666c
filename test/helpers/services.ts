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
