import { existsSync } from 'node:fs';
import path from 'node:path';

/** The folder holding Trainbench's package.json, found from this compiled file's location. */
export function packageRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'CMakeLists.txt'))) return dir;
    if (existsSync(path.join(dir, 'package.json')) && path.basename(dir) === 'app.asar') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the Trainbench package root above ${from}`);
    dir = parent;
  }
}
