import { z } from 'zod';

import { ModelSpecSchema } from './model-spec';

/** Where the workbench looks for model spec files, relative to the workspace (and the workspace's own top folder). */
export const MODEL_SPEC_DIR = 'models';

/**
 * A model the New run form can offer: a built-in by name, or a spec file of the
 * workspace by its relative path. A file that does not parse is listed with its
 * problem (naming the field), so a typo is visible rather than the file missing.
 */
export const ModelEntrySchema = z.object({
  /** The built-in's name, or the file's relative path (what models.readSpec takes). */
  name: z.string(),
  source: z.enum(['builtin', 'workspace']),
  /** The spec's family; null when the file cannot be read. */
  family: z.string().nullable(),
  /** Why a spec file cannot be used, in one line; null when it can. */
  problem: z.string().nullable(),
  /** A usable spec file's spec, so a wizard's model can be found among the files again (Apply); absent for built-ins. */
  spec: ModelSpecSchema.optional(),
});
export type ModelEntry = z.infer<typeof ModelEntrySchema>;

export const ReadSpecRequestSchema = z.object({ path: z.string().min(1).max(4096) }).strict();
export const ReadSpecResultSchema = z.object({ path: z.string(), spec: ModelSpecSchema });
