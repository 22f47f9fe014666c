import { z } from 'zod';

import { IdSchema } from './ids';
import { BIDI_MARK, hasVisible } from './shell-word';

/**
 * A run's name, tags and notes: what a person writes about a run, kept in
 * runs/<id>/notes.json beside run.json (which stays as the run wrote it). The
 * same caps hold on write (runs.annotate) and on read, so a tampered or huge
 * file is reported and skipped, never shown or trusted.
 */
export const RUN_NOTES_SCHEMA_VERSION = 1;
export const RUN_NAME_MAX_CHARS = 120;
export const RUN_TAG_MAX_CHARS = 32;
export const RUN_TAGS_MAX = 12;
export const RUN_NOTES_MAX_CHARS = 4000;
/** notes.json is read up to this: the caps above, JSON-escaped at worst, fit well inside. */
export const RUN_NOTES_MAX_BYTES = 64 * 1024;

// Control characters would hide text or break a one-line title; the notes may hold line breaks and tabs.
const NO_CONTROLS = /^[^\p{Cc}]*$/u;
const CONTROL_NOT_LINE = /[^\P{Cc}\n\r\t]/u;
// Bidirectional formatting marks reorder what a list or a page shows (a name could read as another run's):
// the same marks the printers escape (api/shell-word.ts).
const noBidi = (what: string) => [(text: string) => !BIDI_MARK.test(text), `${what} no bidirectional formatting marks (U+202A-202E, U+2066-2069, U+200E/F, U+061C): they reorder what is shown`] as const;
// The Unicode line and paragraph separators (Zl, Zp; not \p{Cc}) break a line as a newline does, on a page and in
// a terminal, and the printers escape them too: a name or tag stays one line, and notes break lines with \n only.
const LINE_SEPARATOR = /[\u2028\u2029]/u;
// A name or tag of blanks (U+2800), marks or invisible characters shows as an empty pill or as nothing (re-attack 12).
const seenAs = (what: string) => [`${what} has something to see: not only blanks, combining marks or invisible characters`] as const;
const noLineSeparator = (what: string) =>
  [(text: string) => !LINE_SEPARATOR.test(text), `${what} no line or paragraph separators (U+2028, U+2029): they break what is shown as a newline would`] as const;

export const RunNameSchema = z
  .string()
  .trim()
  .max(RUN_NAME_MAX_CHARS, `a run's name is at most ${RUN_NAME_MAX_CHARS} characters`)
  .regex(NO_CONTROLS, "a run's name is one line, without control characters")
  .refine(...noBidi("a run's name has"))
  .refine(...noLineSeparator("a run's name has"))
  .refine((name) => name === '' || hasVisible(name), ...seenAs("a run's name"));
export const RunTagSchema = z
  .string()
  .trim()
  .min(1, 'a tag is not empty')
  .max(RUN_TAG_MAX_CHARS, `a tag is at most ${RUN_TAG_MAX_CHARS} characters`)
  .regex(/^[^,\p{Cc}]+$/u, 'a tag has no commas or control characters (tags are separated by commas)')
  .refine(...noBidi('a tag has'))
  .refine(...noLineSeparator('a tag has'))
  .refine(hasVisible, ...seenAs('a tag'));
export const RunTagsSchema = z
  .array(RunTagSchema)
  .max(RUN_TAGS_MAX, `a run has at most ${RUN_TAGS_MAX} tags`)
  .refine((tags) => new Set(tags).size === tags.length, 'each tag once');
export const RunNotesTextSchema = z
  .string()
  .max(RUN_NOTES_MAX_CHARS, `a run's notes are at most ${RUN_NOTES_MAX_CHARS} characters`)
  .refine((text) => !CONTROL_NOT_LINE.test(text), "a run's notes have no control characters but line breaks and tabs")
  .refine(...noBidi("a run's notes have"))
  .refine(...noLineSeparator("a run's notes have"));

/** What the Runs list and the run's page show. */
export const RunAnnotationSchema = z.object({
  /** '' when the run has no name of its own (its title names it). */
  name: RunNameSchema,
  tags: RunTagsSchema,
  notes: RunNotesTextSchema,
  updatedAt: z.iso.datetime(),
});
export type RunAnnotation = z.infer<typeof RunAnnotationSchema>;

/** runs/<id>/notes.json. */
export const RunNotesFileSchema = RunAnnotationSchema.extend({
  schemaVersion: z.literal(RUN_NOTES_SCHEMA_VERSION),
});
export type RunNotesFile = z.infer<typeof RunNotesFileSchema>;

/** runs.annotate: the fields given replace the stored ones; those left out stay. */
export const RunAnnotateParamsSchema = z
  .object({
    id: IdSchema,
    name: RunNameSchema.optional(),
    tags: RunTagsSchema.optional(),
    notes: RunNotesTextSchema.optional(),
  })
  .strict()
  .refine((p) => p.name !== undefined || p.tags !== undefined || p.notes !== undefined, 'give a name, tags or notes to store');
export type RunAnnotateParams = z.infer<typeof RunAnnotateParamsSchema>;

/** Tags as a person types them, "a, b, a": trimmed, empty ones dropped, each once, in order. */
export function parseTagList(text: string): string[] {
  return [...new Set(text.split(',').map((t) => t.trim()).filter((t) => t.length > 0))];
}

/** What is wrong with a list of tags, naming the tag at fault, or null: the editor says it before anything is sent. */
export function tagListProblem(tags: readonly string[]): string | null {
  for (const tag of tags) {
    const parsed = RunTagSchema.safeParse(tag);
    if (!parsed.success) {
      const shown = JSON.stringify(tag.length > 24 ? `${tag.slice(0, 24)}…` : tag);
      return `tag ${shown} (${[...tag].length} characters): ${parsed.error.issues[0].message}`;
    }
  }
  if (tags.length > RUN_TAGS_MAX) return `a run has at most ${RUN_TAGS_MAX} tags (${tags.length} given)`;
  return null;
}
