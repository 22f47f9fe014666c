// Issue 40 in the app: a torchrun job across two nodes, started from the Benchmarks area. The form takes the address
// the other nodes reach; once the job's first launch opens its hub the page shows the line to run on the other node,
// with its join code; node 1 runs it as a person would, and the result names node 1's rank, which sleeps 30 ms before
// each backward, the straggler. As root (CI) the nodes are two network namespaces joined by a veth pair, and serve is
// started with --collector-host on node 0's veth address; elsewhere two torchrun agents on loopback. At 1440 and 1024 px.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';

import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';

import { serveInChromium, SHOTS } from '../helpers/e2e';
import { freePort } from '../helpers/free-port';
import { CLI } from '../helpers/repo';
import { twoNamespaces } from '../helpers/two-namespaces';
import { binOf, TORCH2 } from '../script/probe-run';
import { SCRIPTS } from '../script/script-helpers';

// Timing the collectives needs torch 2 (the probe declines on 1.x).
const TORCHRUN = TORCH2.python ? binOf(TORCH2.python, 'torchrun') : '';
const two = twoNamespaces();
const node0Addr = two.root ? two.addr0 : '127.0.0.1';
const fx = serveInChromium({ serveArgs: ['--allow-scripts', ...(two.root ? ['--collector-host', two.addr0] : [])], timeoutMs: 120_000 });
const children: ChildProcess[] = [];
afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

/** One node's part: a torchrun agent of a static two-node rendezvous on node 0's address, one rank, rank 1 planted slow. */
const job = (port: number, nodeRank: number) =>
  [TORCHRUN, '--nnodes', '2', '--node_rank', String(nodeRank), '--nproc_per_node', '1', '--master_addr', node0Addr, '--master_port', String(port), '--redirects', '1', '--tee', '1',
    path.join(SCRIPTS, 'ddp_straggler.py'), '--steps', '40', '--slow-rank', '1', '--slow-ms', '30'];

/** Node 1 as a person starts it: the line the page shows, with its own torchrun command after `--`. */
function node1(line: string, port: number): Promise<{ code: number; output: string }> {
  const words = line.split(' ');
  expect(words.slice(0, 2)).toEqual(['trainbench', 'join']);
  expect(words.slice(3)).toEqual(['--', '<its', 'torchrun', 'command>']);
  return new Promise((resolve) => {
    const join = [process.execPath, CLI, 'join', words[2]!, '--', ...job(port, 1)];
    // In the other namespace, gloo is told its veth (it would pick the host name's address, which node 0 does not reach).
    const [bin, ...args] = two.root ? ['ip', 'netns', 'exec', two.ns, 'env', `GLOO_SOCKET_IFNAME=${two.veth1}`, ...join] : join;
    const child = spawn(bin!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (status) => resolve({ code: status ?? 1, output }));
  });
}

async function benchmarkAcross(page: Page, port: number, collector = node0Addr): Promise<void> {
  await page.goto(`${fx.serve.url}#/benchmarks`);
  await page.getByTestId('target-script').check();
  await page.locator('[data-test="script-command"]').fill(job(port, 0).join(' '));
  await page.locator('[data-test="script-cwd"]').fill(SCRIPTS);
  if (two.root) {
    await page.locator('[data-test="script-env-add"]').click();
    await page.locator('[data-test="script-env-name"]').fill('GLOO_SOCKET_IFNAME');
    await page.locator('[data-test="script-env-value"]').fill(two.veth0);
  }
  await page.locator('[data-test="script-warmup"]').fill('3');
  await page.locator('[data-test="script-steps"]').fill('20');
  await page.locator('[data-test="script-repeat"]').fill('1');
  await page.locator('[data-test="script-collector"]').fill(collector);
  await page.locator('[data-test="script-start"]').click();
}

describe.skipIf(!TORCH2.python)('a torchrun job across two nodes, from the Benchmarks area', () => {
  it('refuses an address that is not one, naming it, before anything runs', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1000 } });
    await benchmarkAcross(page, 1, '10.0.0.1:99999');
    expect(await page.locator('[data-test="script-error"]').innerText()).toBe('address the other nodes reach: "10.0.0.1:99999" is not host[:port] (e.g. 10.0.0.1 or 10.0.0.1:29400)');
    expect(await page.locator('[data-test="confirm-run"]').count()).toBe(0);
    await page.close();
  });

  it('shows the line for the other node once the job starts; node 1 follows it and its rank is named the straggler', async () => {
    const page = await fx.browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const port = await freePort();
    await benchmarkAcross(page, port);
    await page.locator('[data-test="confirm-run"]').click();
    const line = page.locator('[data-test="script-join-line"]');
    await line.waitFor({ timeout: 60_000 });
    const text = await line.innerText();
    expect(text).toMatch(/^trainbench join tbf1\.[\w-]+ -- <its torchrun command>$/);
    expect(await page.locator('[data-test="script-join"]').innerText()).toContain('on each other node, start its part once');
    await page.locator('[data-test="script-join"]').screenshot({ path: path.join(SHOTS, 'join-nodes-code-1440.png') });
    await page.setViewportSize({ width: 1024, height: 1100 });
    await page.waitForTimeout(200);
    // The code is long and unbroken: it wraps inside its box, and the page does not scroll sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1024);
    await page.screenshot({ path: path.join(SHOTS, 'join-nodes-running-1024.png'), fullPage: true });

    const follower = node1(text, port);
    // Node 1's rank shows in the status line as soon as its first step arrives.
    await expect.poll(() => page.locator('[data-test="script-status"]').innerText(), { timeout: 120_000, interval: 100 }).toMatch(/ranks heard: 0 \(node 0, [^)]+\) at step \d+, 1 \(node 1, [^)]+\) at step \d+/);
    await page.locator('[data-test="script-status"]').screenshot({ path: path.join(SHOTS, 'join-nodes-ranks-heard-1024.png') });
    const row = page.locator('[data-testid^="script-benchmark-collectives-"]');
    await row.first().waitFor({ timeout: 240_000 });
    // On failure, the whole panel says why (the verdict's reason, the clocks' uncertainty).
    expect(await row.first().locator('summary').innerText(), await row.first().innerText()).toMatch(/: rank 1 is the straggler$/);
    // The job ended: its code is no longer offered, and node 1's join ended with it.
    expect(await page.locator('[data-test="script-join"]').count()).toBe(0);
    const { code, output } = await follower;
    expect(code, output).toBe(0);
    const panel = row.first().getByTestId('rank-collectives');
    expect(await panel.getByTestId('rank-collectives-ranks').locator('tbody tr').count()).toBe(2);
    await page.setViewportSize({ width: 1440, height: 1100 });
    await row.first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'join-nodes-result-1440.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 300_000);
});
