// Two "machines" on one (issue 40): this network namespace and a second one joined by a veth pair, each end with an
// address of a /24 of its own per run (runs side by side on one machine do not meet). Root only (CI runs as root):
// elsewhere `root` is false and nothing is made. Made before the file's tests, removed after them.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll } from 'vitest';

export interface TwoNamespaces {
  root: boolean;
  /** The second namespace: run node 1 in it with `ip netns exec <ns> ...`. */
  ns: string;
  /** Node 0's end (this namespace) and node 1's, with their addresses. */
  veth0: string;
  veth1: string;
  addr0: string;
  addr1: string;
  ip: (...args: string[]) => Buffer;
}

export function twoNamespaces(): TwoNamespaces {
  const root = process.getuid?.() === 0;
  const tag = randomBytes(3).toString('hex');
  const net = `10.${200 + (parseInt(tag.slice(0, 2), 16) % 50)}.${parseInt(tag.slice(2, 4), 16)}`;
  const two: TwoNamespaces = {
    root,
    ns: `tb-node1-${tag}`,
    veth0: `tbv0${tag}`,
    veth1: `tbv1${tag}`,
    addr0: `${net}.1`,
    addr1: `${net}.2`,
    ip: (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' }),
  };
  const { ns, veth0, veth1, addr0, addr1, ip } = two;
  beforeAll(() => {
    if (!root) return;
    ip('netns', 'add', ns);
    ip('link', 'add', veth0, 'type', 'veth', 'peer', 'name', veth1);
    ip('link', 'set', veth1, 'netns', ns);
    ip('addr', 'add', `${addr0}/24`, 'dev', veth0);
    ip('link', 'set', veth0, 'up');
    ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${addr1}/24`, 'dev', veth1);
    ip('netns', 'exec', ns, 'ip', 'link', 'set', veth1, 'up');
    ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
  });
  afterAll(() => {
    if (!root) return;
    for (const args of [['link', 'del', veth0], ['netns', 'del', ns]]) {
      try {
        ip(...args);
      } catch {
        // gone already
      }
    }
  });
  return two;
}
