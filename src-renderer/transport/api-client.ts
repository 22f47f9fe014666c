import { ApiError } from '@api/errors';
import type { EventData, EventName } from '@api/events';
import { apiEvents, isEventName } from '@api/events';
import { formatIssues } from '@api/format-issues';
import type { MethodName, MethodParams, MethodResult } from '@api/methods';
import { apiMethods } from '@api/methods';

import type { Transport } from './transport';

/** Typed calls over any transport; answers and events are checked against the contract. */
export class ApiClient {
  constructor(readonly transport: Transport) {}

  async call<M extends MethodName>(method: M, params: MethodParams<M>): Promise<MethodResult<M>> {
    const outcome = await this.transport.call(method, params);
    if (!outcome.ok) throw ApiError.fromPayload(outcome.error);
    const parsed = apiMethods[method].result.safeParse(outcome.result);
    if (!parsed.success) {
      throw new ApiError('E_INTERNAL', `unexpected answer to ${method}: ${formatIssues(parsed.error, 'result')}`);
    }
    return parsed.data as MethodResult<M>;
  }

  on<E extends EventName>(event: E, listener: (data: EventData<E>) => void): () => void {
    return this.transport.onEvent((name, data) => {
      if (name !== event || !isEventName(name)) return;
      const parsed = apiEvents[event].safeParse(data);
      if (parsed.success) listener(parsed.data as EventData<E>);
    });
  }
}
