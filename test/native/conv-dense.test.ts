// Convolutions on fewer input pixels than kernel taps (the board network's heads: 3x3 on 2x2)
// run as a dense layer over all pixels (native/src/cpu/ops_conv.cpp). The random gradient checks
// never draw such a small input, so a C++ driver (conv-dense/check.cpp) runs the engine's path
// on 40 random dense shapes against a direct convolution, in double and in float.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const tmp = tempDir('trainbench-conv-dense-');
const program = path.join(tmp.dir, 'check');
const engine = path.join(REPO_ROOT, 'build', 'libtb_engine.a');

beforeAll(() => {
  if (!fs.existsSync(engine)) throw new Error(`conv-dense needs the engine library ${engine}: run npm run build:native`);
  const cxx = process.env.CXX ?? 'c++';
  execFileSync(cxx, ['-std=c++17', '-O2', '-I', path.join(REPO_ROOT, 'native', 'src'),
    path.join(__dirname, 'conv-dense', 'check.cpp'), engine, '-lpthread', '-o', program], { stdio: 'inherit' });
}, 120_000);
afterAll(() => tmp.cleanup());

describe('dense convolution (fewer pixels than taps)', () => {
  it('matches a direct convolution forward and backward, in double and float', () => {
    const r = spawnSync(program, [], { encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/checked 40 dense convolutions/);
  });
});
