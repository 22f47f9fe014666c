import { z } from 'zod';

import { IdSchema } from './ids';

/**
 * The ADR report contract (issue 13). A report is a folder of the workspace,
 * reports/NNNN-slug/, holding NNNN-slug.md, its SVG figures (linked relatively,
 * so the folder renders on a code host as is) and report.json (the runs and
 * section order it was generated from, so it can be regenerated).
 */

/** The sections of an ADR, MADR / Nygard style, in their default order. */
export const REPORT_SECTIONS = ['status', 'context', 'reproduce', 'phases', 'limits', 'attempts', 'decision', 'consequences'] as const;
export const ReportSectionSchema = z.enum(REPORT_SECTIONS);
export type ReportSection = z.infer<typeof ReportSectionSchema>;

/** A report's id is its folder name: "0003-mlp-on-fashion-mnist". */
export const ReportIdSchema = IdSchema;

/** A figure file name inside the report's folder: "phase-breakdown.svg"; no folders, nothing hidden. */
export const FigureNameSchema = z
  .string()
  .max(128)
  .regex(/^[a-z0-9][a-z0-9-]*\.svg$/, 'figure names are lower-case letters, digits and "-", ending in .svg');

/** Largest markdown a save accepts (a long report is ~50 kB). */
export const MAX_REPORT_MARKDOWN_CHARS = 2_000_000;

export const ReportFigureSchema = z.object({
  /** File name beside the markdown, as linked from it. */
  name: FigureNameSchema,
  title: z.string(),
  /** The alt text the markdown gives it (the chart builder's screen-reader label). */
  alt: z.string(),
  /** The run it was drawn from, or null when drawn from several. */
  runId: z.string().nullable(),
});
export type ReportFigure = z.infer<typeof ReportFigureSchema>;

export const ReportSummarySchema = z.object({
  id: z.string(),
  /** The NNNN of the folder name. */
  number: z.number().int().min(1),
  title: z.string(),
  createdAt: z.string(),
  /** When the markdown was last written (generated, saved or regenerated). */
  updatedAt: z.string(),
  runIds: z.array(z.string()),
  /** The markdown file's path relative to the workspace. */
  path: z.string(),
  /** Set when report.json or the markdown cannot be read: the report is listed with the problem, never dropped. */
  problem: z.string().nullable(),
});
export type ReportSummary = z.infer<typeof ReportSummarySchema>;

export const ReportDetailSchema = z.object({
  summary: ReportSummarySchema,
  markdown: z.string(),
  figures: z.array(ReportFigureSchema),
  sections: z.array(ReportSectionSchema),
  /** What the generator could not do and why: a chart left out for missing data, a run it could not read. */
  notes: z.array(z.string()),
});
export type ReportDetail = z.infer<typeof ReportDetailSchema>;

export const ReportGenerateRequestSchema = z
  .object({
    /** Benchmark, batch-search, optimise, train and loader-benchmark runs, in the order their attempts appear. */
    runIds: z.array(IdSchema).min(1).max(50),
    /** Default: from the first run, e.g. "Training benchmark of mlp on fashion-mnist-train". */
    title: z
      .string()
      .trim()
      .min(1)
      .max(200)
      // Control and bidirectional-override characters would garble the heading and the file name.
      .regex(/^[^\p{Cc}\u202A-\u202E\u2066-\u2069]*$/u, 'titles hold no control or bidirectional-override characters')
      .optional(),
    /** Which sections, in which order; default REPORT_SECTIONS. */
    sections: z.array(ReportSectionSchema).min(1).max(REPORT_SECTIONS.length).optional(),
  })
  .strict();
export type ReportGenerateRequest = z.infer<typeof ReportGenerateRequestSchema>;

export const ReportSaveRequestSchema = z
  .object({ id: ReportIdSchema, markdown: z.string().max(MAX_REPORT_MARKDOWN_CHARS) })
  .strict();

export const ReportExportRequestSchema = z
  .object({
    id: ReportIdSchema,
    /** A folder relative to the workspace (created if missing); the report's files are written into it. */
    dir: z.string().min(1).max(4096),
  })
  .strict();

export const ReportExportResultSchema = z.object({
  /** Absolute path of the folder written. */
  dir: z.string(),
  /** File names written into it. */
  files: z.array(z.string()),
});
export type ReportExportResult = z.infer<typeof ReportExportResultSchema>;

/** Export into a folder the person picks in the desktop shell's dialog; dir null when they cancelled. */
export const ReportExportChosenResultSchema = z.object({ dir: z.string().nullable(), files: z.array(z.string()) });

/** One Chrome trace-event (the JSON Perfetto and chrome://tracing open); complete ('X') and metadata ('M') events. */
export const TraceEventSchema = z.object({
  name: z.string(),
  cat: z.string().optional(),
  ph: z.enum(['X', 'M']),
  /** Microseconds from the trace's start. */
  ts: z.number(),
  /** Microseconds; complete events only. */
  dur: z.number().nonnegative().optional(),
  pid: z.number().int(),
  tid: z.number().int(),
  args: z.record(z.string(), z.unknown()).optional(),
});
export type TraceEvent = z.infer<typeof TraceEventSchema>;

export const TraceFileSchema = z.object({
  traceEvents: z.array(TraceEventSchema),
  displayTimeUnit: z.literal('ms'),
  /** Which run, what the tracks are, and how the step times were measured. */
  metadata: z.record(z.string(), z.unknown()),
});
export type TraceFile = z.infer<typeof TraceFileSchema>;

export const RunTraceResultSchema = z.object({
  runId: z.string(),
  /** Where it was also written, relative to the workspace: runs/<id>/trace.json. */
  path: z.string(),
  trace: TraceFileSchema,
});
export type RunTraceResult = z.infer<typeof RunTraceResultSchema>;

/**
 * Generated blocks are wrapped in HTML comments, which a code host hides:
 * `<!-- tb:begin phases -->` ... `<!-- tb:end phases -->`. Regenerating replaces
 * what is between them and keeps everything outside.
 */
export const BLOCK_ID_PATTERN = /^[a-z0-9][a-z0-9.-]*$/;
export const blockBegin = (id: string) => `<!-- tb:begin ${id} -->`;
export const blockEnd = (id: string) => `<!-- tb:end ${id} -->`;
const MARKER_LINE = /^[ \t]*<!-- tb:(?:begin|end) [a-z0-9][a-z0-9.-]* -->[ \t]*(?:\r?\n|$)/gm;

/**
 * The markdown without the block markers, for a preview whose markdown renderer
 * escapes raw HTML (markdown-it with html off would show them as text).
 */
export function stripBlockMarkers(markdown: string): string {
  return markdown.replace(MARKER_LINE, '');
}
