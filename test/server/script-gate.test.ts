import { afterEach, describe, expect, it } from 'vitest';

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../src-main/api/errors';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { createServices, type Services } from '../../src-main/core/services';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

// Script targets run the user's own command: through the router (the desktop
// window, serve mode) only where the shell allows it, never by default.
describe('script requests through the router', () => {
  const open: { services: Services; cleanup(): void }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.services.dispose();
      o.cleanup();
    }
  });

  async function services(allowScripts?: boolean, collectorHost?: string): Promise<Services> {
    requireBuilt();
    const ws = tempDir();
    const s = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY }, allowScripts, ...(collectorHost ? { collectorHost } : {}) });
    open.push({ services: s, cleanup: ws.cleanup });
    return s;
  }

  const request = (cwd: string) => ({ target: { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd }, steps: 1, repeat: 2 });

  // Issue 40: any page can send serve requests; a collector other machines reach is opened only where the user said.
  it('with --allow-scripts, may have the collector listen on loopback or the --collector-host address only', async () => {
    const cwd = tempDir();
    const ask = (s: Services, host: string, method: string) => s.router.dispatch(method, { ...request(cwd.dir), collector: { host } }).catch((e: unknown) => e as ApiError);
    const plain = await services(true);
    for (const method of ['benchmark.training', 'optimise.start']) {
      // 127.0.0.256 looks like loopback but is a host name a resolver could answer with any address (round 7).
      for (const host of ['0.0.0.0', '10.0.0.1', '::', '127.0.0.256', '127.1']) {
        const err = await ask(plain, host, method);
        expect((err as ApiError).code, `${method} ${host}`).toBe('E_FORBIDDEN');
        expect((err as ApiError).message).toContain(`only on loopback, not on ${JSON.stringify(host)}: serve mode is started with --collector-host ADDRESS`);
      }
    }
    const named = await services(true, '10.0.0.1');
    expect(((await ask(named, '0.0.0.0', 'benchmark.training')) as ApiError).message).toContain('only on loopback or 10.0.0.1, not on "0.0.0.0"');
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(false);
    cwd.cleanup();
  });

  it('are refused by default (serve mode without --allow-scripts), naming how to allow them, and start nothing', async () => {
    const s = await services();
    const cwd = tempDir();
    for (const method of ['benchmark.training', 'optimise.start']) {
      const err = await s.router.dispatch(method, request(cwd.dir)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('E_FORBIDDEN');
      expect((err as ApiError).message).toContain('--allow-scripts');
    }
    // The old script.* aliases are gone from the contract (issue 39): an unknown method, never a way in.
    for (const method of ['script.benchmark', 'script.optimise', 'script.train', 'script.findBatchSize', 'script.cancel']) {
      const err = await s.router.dispatch(method, request(cwd.dir)).catch((e: unknown) => e);
      expect((err as ApiError).code, method).toBe('E_UNKNOWN_METHOD');
    }
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(false);
    cwd.cleanup();
  });

  it('are refused under the methods both targets share too (train.run, benchmark.training, batchSize.search, optimise.start)', async () => {
    const s = await services();
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd: cwd.dir };
    const asks: [string, object][] = [
      ['train.run', { target, maxSteps: 1 }],
      ['benchmark.training', { target, steps: 1, repeat: 2 }],
      ['batchSize.search', { target, stepsPerTrial: 1 }],
      ['optimise.start', { target, steps: 1, repeat: 2 }],
    ];
    for (const [method, params] of asks) {
      const err = await s.router.dispatch(method, params).catch((e: unknown) => e);
      expect((err as ApiError).code, method).toBe('E_FORBIDDEN');
    }
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(false);
    cwd.cleanup();
  });

  it('name what is wrong with the form the request chose, not with both targets\' forms', async () => {
    const s = await services(true);
    const script = await s.router.dispatch('optimise.start', { target: { kind: 'script', command: [], cwd: '/tmp' }, repeat: 1 }).catch((e: unknown) => e);
    expect((script as ApiError).code).toBe('E_BAD_REQUEST');
    expect((script as ApiError).message).toMatch(/target\.command/);
    expect((script as ApiError).message).toMatch(/repeat/);
    expect((script as ApiError).message).not.toMatch(/spec|data/);
    const engine = await s.router.dispatch('benchmark.training', { spec: { family: 'mlp' }, data: { kind: 'builtin', name: 'fashion-mnist' }, repeat: 0 }).catch((e: unknown) => e);
    expect((engine as ApiError).code).toBe('E_BAD_REQUEST');
    expect((engine as ApiError).message).toMatch(/repeat/);
    expect((engine as ApiError).message).not.toMatch(/target|command|cwd/);
  });

  it('list a script job under the shared method with its target, and answer in the script form', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const listed: unknown[] = [];
    const off = s.events.subscribe((event, data) => {
      if (event === 'jobs.started') listed.push(data);
    });
    const err = await s.router.dispatch('benchmark.training', { ...request(cwd.dir), jobId: 'shared-method-job' }).catch((e: unknown) => e);
    off();
    expect((err as ApiError).code).toBe('E_SCRIPT');
    expect(listed).toEqual([expect.objectContaining({ jobId: 'shared-method-job', method: 'benchmark.training', kind: 'benchmark', target: 'script' })]);
    cwd.cleanup();
  });

  it('run where the shell allows them (the desktop app, serve --allow-scripts)', async () => {
    const s = await services(true);
    const cwd = tempDir();
    // The command trains nothing, so the benchmark fails as a script error, after running it.
    const err = await s.router.dispatch('benchmark.training', request(cwd.dir)).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_SCRIPT');
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(true);
    cwd.cleanup();
  });

  it('never run the command a script optimisation run file names on a resume request, even where scripts are allowed', async () => {
    const s = await services(true);
    const cwd = tempDir();
    // A stopped script optimisation as a workspace copied from elsewhere could hold it: its file names the command.
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd: cwd.dir, env: {} };
    const now = new Date().toISOString();
    const dir = s.workspace.resolve(path.join('runs', 'planted-wizard'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, 'run.json'),
      JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id: 'planted-wizard', kind: 'optimise', status: 'cancelled', createdAt: now, finishedAt: now, config: { target, request: { target, steps: 1, repeat: 2 }, jobId: 'planted-wizard' } }),
    );
    const err = await s.router.dispatch('optimise.resume', { jobId: 'planted-wizard' }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_FORBIDDEN');
    expect((err as ApiError).message).toContain('resumeFrom planted-wizard');
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(false);
    cwd.cleanup();
  });
});
