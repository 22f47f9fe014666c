import { ApiError, toApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { MethodName, MethodResult, ApiMethods } from '../api/methods';
import { apiMethods, isMethodName } from '../api/methods';
import type { z } from 'zod';

/** One handler per contract method, receiving already validated params. */
export type ApiHandlers = {
  [M in MethodName]: (params: z.infer<ApiMethods[M]['params']>) => Promise<MethodResult<M>>;
};

export interface ApiRouter {
  /** Validates `params` against the method's schema, runs the handler, and throws ApiError on failure. */
  dispatch(method: string, params: unknown): Promise<unknown>;
}

export function createApiRouter(handlers: ApiHandlers): ApiRouter {
  return {
    async dispatch(method, params) {
      if (!isMethodName(method)) {
        throw new ApiError('E_UNKNOWN_METHOD', `unknown method ${JSON.stringify(method)}`);
      }
      const parsed = apiMethods[method].params.safeParse(params ?? {});
      if (!parsed.success) {
        throw new ApiError('E_BAD_REQUEST', `bad request to ${method}: ${formatIssues(parsed.error, 'params')}`);
      }
      const handler = handlers[method] as (p: unknown) => Promise<unknown>;
      try {
        return await handler(parsed.data);
      } catch (err) {
        throw toApiError(err);
      }
    },
  };
}

export { toApiError } from '../api/errors';
