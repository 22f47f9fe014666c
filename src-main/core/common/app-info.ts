import type { AppInfo } from '../../api/app-info';
import { buildInfo } from './build-info';

/** What the About panel shows about this workbench: its build, the runtime it runs in, and its workspace. */
export function appInfo(workspaceRoot: string): AppInfo {
  const { version, commit } = buildInfo();
  return {
    version,
    commit,
    workspace: workspaceRoot,
    node: process.versions.node,
    electron: process.versions.electron ?? null,
    platform: `${process.platform} ${process.arch}`,
  };
}
