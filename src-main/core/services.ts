import { EngineClient } from '../engine/engine-client';
import type { SupervisorOptions } from '../engine/supervisor';
import type { ApiRouter } from './api-router';
import { createApiRouter } from './api-router';
import { EventHub } from './event-hub';
import { TrainingService } from './training-service';
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
  training: TrainingService;
  dispose(): Promise<void>;
}

export async function createServices(options: ServicesOptions): Promise<Services> {
  const workspace = await openWorkspace(options.workspaceDir);
  const engine = new EngineClient(options.engine);
  const events = new EventHub();
  const unsubscribe = engine.onStatus((status) => events.emit('engine.status', status));
  const training = new TrainingService(engine, events, workspace);

  const router = createApiRouter({
    'engine.version': () => engine.version(),
    'engine.devices': () => engine.devices(),
    'engine.ping': () => engine.ping(),
    'engine.status': () => Promise.resolve(engine.status()),
    'model.info': ({ spec }) => engine.modelInfo(spec),
    'train.run': (request) => training.run(request),
    'train.cancel': ({ runId }) => training.cancel(runId),
  });

  return {
    workspace,
    engine,
    router,
    events,
    training,
    async dispose() {
      unsubscribe();
      await engine.stop();
    },
  };
}
