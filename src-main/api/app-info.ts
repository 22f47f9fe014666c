import { z } from 'zod';

/** The workbench's build and where it works, for the About panel (app.info). */
export const AppInfoSchema = z.object({
  /** package.json's version. */
  version: z.string(),
  /** The checkout's commit when it runs from git; null in a packaged app. */
  commit: z.string().nullable(),
  /** The workspace folder every run, dataset and report is written to. */
  workspace: z.string(),
  node: z.string(),
  /** Electron's version in the desktop app; null in serve mode. */
  electron: z.string().nullable(),
  /** "linux x64" and the like. */
  platform: z.string(),
});
export type AppInfo = z.infer<typeof AppInfoSchema>;
