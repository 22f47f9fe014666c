import { ApiError, toApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { MethodName, MethodResult, ApiMethods } from '../api/methods';
import { apiMethods, isMethodName } from '../api/methods';
import type { z } from 'zod';

/**
 * Who asks: one object per window (a serve connection, an app window), so work one window queues cannot keep another
 * waiting; in-process callers (the CLI) share `IN_PROCESS`.
 */
export type Caller = object;
export const IN_PROCESS: Caller = Object.freeze({ caller: 'in-process' });

/** One handler per contract method, receiving already validated params and who asks. */
export type ApiHandlers = {
  [M in MethodName]: (params: z.infer<ApiMethods[M]['params']>, caller: Caller) => Promise<MethodResult<M>>;
};

export interface ApiRouter {
  /** Validates `params` against the method's schema, runs the handler, and throws ApiError on failure. */
  dispatch(method: string, params: unknown, caller?: Caller): Promise<unknown>;
}

export function createApiRouter(handlers: ApiHandlers): ApiRouter {
  return {
    async dispatch(method, params, caller = IN_PROCESS) {
      if (!isMethodName(method)) {
        throw new ApiError('E_UNKNOWN_METHOD', `unknown method ${JSON.stringify(method)}`);
      }
      const parsed = apiMethods[method].params.safeParse(params ?? {});
      if (!parsed.success) {
        throw new ApiError('E_BAD_REQUEST', `bad request to ${method}: ${formatIssues(parsed.error, 'params')}`);
      }
      const handler = handlers[method] as (p: unknown, c: Caller) => Promise<unknown>;
      try {
        return await handler(parsed.data, caller);
      } catch (err) {
        throw toApiError(err);
      }
    },
  };
}

export { toApiError } from '../api/errors';
