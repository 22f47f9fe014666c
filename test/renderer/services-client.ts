// The renderer's ApiClient over the real services (real engine host, real workspace), without a server between.
import { toApiError } from '../../src-main/core/api-router';
import type { Services } from '../../src-main/core/services';
import { ApiClient } from '../../src-renderer/transport/api-client';
import { setApiClient } from '../../src-renderer/transport/client-instance';
import type { Transport } from '../../src-renderer/transport/transport';
import { listenerSet } from '../../src-renderer/transport/transport';

/** Installs a client whose calls go to services.router and whose events come from services.events. */
export function installServicesClient(services: Services): ApiClient {
  const states = listenerSet<[never]>();
  const transport: Transport = {
    kind: 'websocket',
    state: () => 'connected',
    onState: states.add,
    call: async (method, params) => {
      try {
        return { ok: true, result: await services.router.dispatch(method, params) };
      } catch (err) {
        return { ok: false, error: toApiError(err).toPayload() };
      }
    },
    onEvent: (listener) => services.events.subscribe((event, data) => listener(event, data)),
    close: () => undefined,
  };
  const client = new ApiClient(transport);
  setApiClient(client);
  return client;
}
