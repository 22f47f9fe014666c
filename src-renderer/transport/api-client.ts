import { ApiError } from '@api/errors';
import type { EventData, EventName } from '@api/events';
import { apiEvents, isEventName } from '@api/events';
import { formatIssues } from '@api/format-issues';
import type { MethodName, MethodParams, MethodResult } from '@api/methods';
import { apiMethods } from '@api/methods';
import { printableDeep } from '@api/shell-word';

import type { Transport } from './transport';

/**
 * Answers whose strings go back to the main process as they are (a file's path, a CSV column to import by):
 * their components escape what they show, and an escaped name would name no file or column.
 */
const RAW_ANSWERS: ReadonlySet<MethodName> = new Set(['files.list', 'datasets.csvHeader', 'datasets.inspect']);

/**
 * Typed calls over any transport; answers and events are checked against the contract, and their strings (from
 * workspace files, which are data a copied workspace may have planted) arrive escaped by printable: a control,
 * bidi or invisible character can then not reach a page, a title, an input or code to paste as itself.
 */
export class ApiClient {
  constructor(readonly transport: Transport) {}

  async call<M extends MethodName>(method: M, params: MethodParams<M>): Promise<MethodResult<M>> {
    const outcome = await this.transport.call(method, params);
    if (!outcome.ok) throw ApiError.fromPayload(outcome.error);
    const parsed = apiMethods[method].result.safeParse(outcome.result);
    if (!parsed.success) {
      throw new ApiError('E_INTERNAL', `unexpected answer to ${method}: ${formatIssues(parsed.error, 'result')}`);
    }
    return (RAW_ANSWERS.has(method) ? parsed.data : printableDeep(parsed.data)) as MethodResult<M>;
  }

  on<E extends EventName>(event: E, listener: (data: EventData<E>) => void): () => void {
    return this.transport.onEvent((name, data) => {
      if (name !== event || !isEventName(name)) return;
      const parsed = apiEvents[event].safeParse(data);
      if (parsed.success) listener(printableDeep(parsed.data) as EventData<E>);
    });
  }
}
