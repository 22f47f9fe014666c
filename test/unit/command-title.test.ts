// A script run is titled by its command in the Runs list: whole when short, its paths
// shortened when long, so the arguments that tell runs apart stay visible.
import { describe, expect, it } from 'vitest';

import { commandTitle } from '../../src-main/core/workspace/run-reader';

describe('commandTitle', () => {
  it('shows a short command whole, paths included', () => {
    expect(commandTitle(['python3', '/home/me/proj/train.py', '--epochs', '3'])).toBe('python3 /home/me/proj/train.py --epochs 3');
  });

  it('shortens the absolute paths of a long command to their file names, keeping every argument', () => {
    const argv = ['/usr/bin/python3', '/work/some/very/long/checkout/path/of/the/user/project/scripts/train_model.py', '--epochs', '50', '--limit', '6400'];
    expect(commandTitle(argv)).toBe('python3 train_model.py --epochs 50 --limit 6400');
  });

  it('cuts the middle of a command that is long even so, keeping its start and its end', () => {
    const argv = ['torchrun', '--nproc_per_node', '2', 'train.py', ...Array.from({ length: 30 }, (_, i) => `--flag${i}`), '--seed', '7'];
    const title = commandTitle(argv);
    expect(title.length).toBeLessThanOrEqual(100);
    expect(title.startsWith('torchrun --nproc_per_node 2 train.py')).toBe(true);
    expect(title.endsWith('--seed 7')).toBe(true);
    expect(title).toContain('…');
  });

  it('cuts between escapes, never inside one: each planted character still says which it was (re-attack 9)', () => {
    for (let pad = 0; pad < 12; pad++) {
      const argv = ['python3', `${'a'.repeat(40 + pad)}\u202e\u202e\u202e`, ...Array.from({ length: 20 }, (_, i) => `--x${i}`), `\u17b4${'b'.repeat(30 + pad)}`];
      const title = commandTitle(argv);
      expect(title.length).toBeLessThanOrEqual(100);
      // Every backslash starts a whole escape.
      expect(title.match(/\\[^]{0,5}/g)!.every((e) => /^\\u[0-9a-f]{4}$/.test(e))).toBe(true);
      expect(title).toContain('…');
    }
  });
});
