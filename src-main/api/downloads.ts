import { z } from 'zod';

import { IdSchema } from './ids';

/**
 * Downloads in serve mode (issue 27 item 12): a report (markdown + SVG figures) or a run's folder as
 * a zip, streamed by the serve server. The browser asks for a one-time ticket over the API (where the
 * token is checked), then fetches DOWNLOAD_PATH + '/ticket/<ticket>'; a script may instead send the
 * token in a header to DOWNLOAD_PATH + '/<kind>/<id>'. The token never goes into a download's URL.
 */
export const DOWNLOAD_PATH = '/download';
/** The header a script sends the serve token in (or Authorization: Bearer <token>). */
export const DOWNLOAD_TOKEN_HEADER = 'x-trainbench-token';

export const DownloadKindSchema = z.enum(['report', 'run']);
export type DownloadKind = z.infer<typeof DownloadKindSchema>;

export const DownloadRequestSchema = z.object({ kind: DownloadKindSchema, id: IdSchema }).strict();

export const DownloadSkippedSchema = z.object({
  /** Inside the zip's folder, e.g. "20261127-033425-71c697/evil.log". */
  name: z.string(),
  /** Why it was left out: "a link (not followed)", "a special file (FIFO, socket or device)". */
  reason: z.string(),
});
export type DownloadSkipped = z.infer<typeof DownloadSkippedSchema>;

export const DownloadTicketSchema = z.object({
  /** Path on the serve server, used once, within expiresInSeconds. */
  url: z.string(),
  fileName: z.string(),
  files: z.number().int().nonnegative(),
  totalBytes: z.number().int().nonnegative(),
  /** What the zip leaves out and why (also listed in the zip's SKIPPED.txt). */
  skipped: z.array(DownloadSkippedSchema),
  expiresInSeconds: z.number(),
});
export type DownloadTicket = z.infer<typeof DownloadTicketSchema>;
