import { z } from 'zod';

import { ApiErrorSchema } from './errors';

/** Messages on the WebSocket transport (serve mode). Electron IPC carries the same payloads. */
export const RequestMessageSchema = z.object({
  type: z.literal('request'),
  id: z.number().int().nonnegative(),
  // Every method's name is short: a long one is junk, refused before it is echoed in an answer.
  method: z.string().min(1).max(128),
  params: z.unknown(),
});

export const ResponseMessageSchema = z.discriminatedUnion('ok', [
  z.object({ type: z.literal('response'), id: z.number().int(), ok: z.literal(true), result: z.unknown() }),
  z.object({ type: z.literal('response'), id: z.number().int(), ok: z.literal(false), error: ApiErrorSchema }),
]);

export const EventMessageSchema = z.object({
  type: z.literal('event'),
  event: z.string(),
  data: z.unknown(),
});

export const ServerMessageSchema = z.union([ResponseMessageSchema, EventMessageSchema]);
export type ServerMessage = z.infer<typeof ServerMessageSchema>;

/** Query parameter that carries the serve-mode token. */
export const TOKEN_QUERY_PARAM = 'token';
/** Path of the WebSocket endpoint in serve mode. */
export const WS_PATH = '/api';
/** Path of serve mode's token check: a tab refused again and again asks whether its token is the server's. */
export const TOKEN_CHECK_PATH = '/api/token';

/**
 * Calls a page keeps on the wire at once; more wait in the page, in order. The server answers at most 32 per
 * connection and refuses the rest: a Benchmarks page of 60 runs asked for them all at once (runs.get each).
 */
export const PAGE_CALLS_IN_FLIGHT = 16;
