// A real ApiClient over a transport whose answers the test decides: the contract checks still run.
import type { CallOutcome } from '../../src-main/api/bridge';
import type { ApiErrorPayload } from '../../src-main/api/errors';
import { ApiClient } from '../../src-renderer/transport/api-client';
import { setApiClient } from '../../src-renderer/transport/client-instance';
import type { Transport, TransportState } from '../../src-renderer/transport/transport';
import { listenerSet } from '../../src-renderer/transport/transport';

export type Answer = (method: string, params: unknown) => CallOutcome | Promise<CallOutcome>;

export interface FakeClient {
  client: ApiClient;
  /** Every call made, in order. */
  calls: { method: string; params: unknown }[];
  emit(event: string, data: unknown): void;
}

/** Installs the client as the renderer's (setApiClient) and returns it with the calls it saw. */
export function installFakeClient(answer: Answer): FakeClient {
  const events = listenerSet<[string, unknown]>();
  const states = listenerSet<[TransportState]>();
  const calls: FakeClient['calls'] = [];
  const transport: Transport = {
    kind: 'websocket',
    state: () => 'connected',
    onState: states.add,
    call: async (method, params) => {
      calls.push({ method, params });
      return answer(method, params);
    },
    onEvent: events.add,
    close: () => undefined,
  };
  const client = new ApiClient(transport);
  setApiClient(client);
  return { client, calls, emit: (e, d) => events.emit(e, d) };
}

export const ok = (result: unknown): CallOutcome => ({ ok: true, result });
export const fail = (code: ApiErrorPayload['code'], message: string): CallOutcome => ({ ok: false, error: { code, message } });
