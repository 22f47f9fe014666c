import path from 'node:path';

import { packageRoot } from '../../engine/package-root';

/**
 * resources/python of this Trainbench: in a checkout, beside package.json; in
 * the packaged app, unpacked next to app.asar (Python cannot read inside it).
 */
export function probeDir(): string {
  const root = packageRoot();
  const base = path.basename(root) === 'app.asar' ? `${root}.unpacked` : root;
  return path.join(base, 'resources', 'python');
}
