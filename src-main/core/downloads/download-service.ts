import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';

import { DOWNLOAD_PATH, type DownloadKind, type DownloadSkipped, type DownloadTicket } from '../../api/downloads';
import { ApiError } from '../../api/errors';
import type { Workspace } from '../workspace/workspace';
import { streamFileBounded } from '../workspace/workspace-files';
import { DEFAULT_DOWNLOAD_LIMITS, planReport, planRun, type DownloadLimits, type DownloadPlan } from './download-plan';
import { ZipWriter } from './zip-writer';

/** A ticket is good once, for this long: enough to start the download it was asked for. */
export const TICKET_TTL_MS = 60_000;
/** Tickets not yet used; past this the oldest is dropped, so asking for many costs bounded memory. */
const MAX_TICKETS = 64;
/** The zip lists what it left out in this file, when it left out anything. */
export const SKIPPED_FILE = 'SKIPPED.txt';

export interface DownloadServiceOptions {
  /** Only serve mode has a server to fetch a ticket from; elsewhere downloads.prepare says so. */
  offered: boolean;
  limits?: Partial<DownloadLimits>;
  now?: () => number;
}

/** What a zip written held: the files and what was left out, planned or found at the time. */
export interface ZipWritten {
  files: number;
  bytes: number;
  skipped: DownloadSkipped[];
}

/** Plans downloads, hands out one-time tickets for them, and writes their zips. */
export class DownloadService {
  readonly limits: DownloadLimits;
  private readonly tickets = new Map<string, { kind: DownloadKind; id: string; expires: number }>();
  private readonly now: () => number;

  /** The workspace folder: an unexpected error's words name its files relative to it. */
  get root(): string {
    return this.workspace.root;
  }

  constructor(
    private readonly workspace: Workspace,
    private readonly options: DownloadServiceOptions,
  ) {
    this.limits = { ...DEFAULT_DOWNLOAD_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
  }

  /** What a download of this report or run would hold; refused (DownloadRefused) when it passes a limit. */
  plan(kind: DownloadKind, id: string): Promise<DownloadPlan> {
    return kind === 'report' ? planReport(this.workspace, id, this.limits) : planRun(this.workspace, id, this.limits);
  }

  /** Plans the download (so a refusal is an answer here, with the file named) and returns a one-time ticket for it. */
  async prepare(kind: DownloadKind, id: string): Promise<DownloadTicket> {
    if (!this.options.offered) {
      throw new ApiError('E_BAD_INPUT', 'downloads are served by `trainbench serve`; the desktop app exports into a folder (Export, or Export to another folder…)');
    }
    const plan = await this.plan(kind, id);
    const now = this.now();
    for (const [t, v] of this.tickets) if (v.expires <= now) this.tickets.delete(t);
    while (this.tickets.size >= MAX_TICKETS) this.tickets.delete(this.tickets.keys().next().value as string);
    const ticket = randomBytes(24).toString('base64url');
    this.tickets.set(ticket, { kind, id, expires: now + TICKET_TTL_MS });
    return {
      url: `${DOWNLOAD_PATH}/ticket/${ticket}`,
      fileName: plan.fileName,
      files: plan.files.length,
      totalBytes: plan.totalBytes,
      skipped: plan.skipped,
      expiresInSeconds: TICKET_TTL_MS / 1000,
    };
  }

  /** What a ticket is good for now, without spending it; null when it is not. */
  peek(ticket: string): { kind: DownloadKind; id: string } | null {
    const found = this.tickets.get(ticket);
    return found !== undefined && found.expires > this.now() ? { kind: found.kind, id: found.id } : null;
  }

  /**
   * What a ticket was given for, spent now: a second use, an expired or unknown ticket give null. `giveBack` makes it
   * good again until it would have expired (the download it was spent on could not be sent: every slot was busy).
   */
  redeem(ticket: string): { kind: DownloadKind; id: string; giveBack(): void } | null {
    const found = this.tickets.get(ticket);
    if (!found) return null;
    this.tickets.delete(ticket);
    if (found.expires <= this.now()) return null;
    return { kind: found.kind, id: found.id, giveBack: () => void this.tickets.set(ticket, found) };
  }

  /**
   * Writes the plan's zip into `sink` (not ended here). Each file is opened as itself when its turn
   * comes: one that became a link, a FIFO, too large or went missing since the plan is left out and
   * listed in SKIPPED.txt, so the zip stays whole. A read or write failure throws; the zip is then
   * incomplete and the caller ends the sink as failed.
   */
  async writeZip(plan: DownloadPlan, sink: Writable, options: { stallMs?: number } = {}): Promise<ZipWritten> {
    const zip = new ZipWriter(sink, { stallMs: options.stallMs });
    const skipped = [...plan.skipped];
    let total = 0;
    let files = 0;
    for (const f of plan.files) {
      let opened: Awaited<ReturnType<typeof streamFileBounded>>;
      try {
        opened = await streamFileBounded(this.workspace, f.file, Math.min(this.limits.maxFileBytes, this.limits.maxTotalBytes - total));
      } catch (err) {
        skipped.push({ name: f.entry, reason: `changed since the download was planned: ${(err as Error).message}` });
        continue;
      }
      try {
        await zip.addFile(f.entry, opened.stream, new Date(opened.mtimeMs));
      } finally {
        opened.stream.destroy();
      }
      total += opened.size;
      files++;
    }
    if (skipped.length) {
      const text = `Left out of this download:\n${skipped.map((s) => `${s.name}: ${s.reason}`).join('\n')}\n`;
      await zip.addFile(`${plan.id}/${SKIPPED_FILE}`, [Buffer.from(text, 'utf8')], new Date(this.now()));
    }
    await zip.finish();
    return { files, bytes: total, skipped };
  }
}
