import { EngineClient } from '../engine/engine-client';
import type { SupervisorOptions } from '../engine/supervisor';
import type { ApiRouter } from './api-router';
import { createApiRouter } from './api-router';
import { EventHub } from './event-hub';
import type { Workspace } from './workspace';
import { openWorkspace } from './workspace';

export interface ServicesOptions {
  workspaceDir: string;
  engine?: SupervisorOptions;
}

/** Everything the shells (Electron, serve, CLI) share: one engine, one workspace, one router. */
export interface Services {
  workspace: Workspace;
  engine: EngineClient;
  router: ApiRouter;
  events: EventHub;
  dispose(): Promise<void>;
}

export async function createServices(options: ServicesOptions): Promise<Services> {
  const workspace = await openWorkspace(options.workspaceDir);
  const engine = new EngineClient(options.engine);
  const events = new EventHub();
  const unsubscribe = engine.onStatus((status) => events.emit('engine.status', status));

  const router = createApiRouter({
    'engine.version': () => engine.version(),
    'engine.devices': () => engine.devices(),
    'engine.ping': () => engine.ping(),
    'engine.status': () => Promise.resolve(engine.status()),
  });

  return {
    workspace,
    engine,
    router,
    events,
    async dispose() {
      unsubscribe();
      await engine.stop();
    },
  };
}
