import type { ApiClient } from './api-client';

let client: ApiClient | null = null;

/** Set once at startup (main.ts), or by a test with a client over a fake transport. */
export function setApiClient(value: ApiClient): void {
  client = value;
}

export function useApiClient(): ApiClient {
  if (!client) throw new Error('the API client is not set up; call setApiClient() first');
  return client;
}
