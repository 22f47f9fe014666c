// A bounded trial stops the script before its own destroy_process_group(). A process group left to the interpreter's
// exit aborted ranks now and then (gloo: "terminate called without an active exception", exit -6): the other node's
// torchrun then waited in its exit barrier until the launch timed out (the two-node tbf test, 1 run in 2-5). The probe
// releases the group at exit, after the script's finally blocks (which may still use it), unless the script did.
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { freePort } from '../helpers/free-port';
import { doneOf, fixtureReport, INTERPRETERS, runProbed } from './probe-run';
import { SCRIPTS } from './script-helpers';

const reports = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('FIXTURE ')).map((l) => fixtureReport<Record<string, boolean>>(l));

describe.each(INTERPRETERS)('a distributed script stopped at the step limit ($label)', (interp) => {
  it.skipIf(!interp.python)("has its process group released at exit, after its own finally block used it", async () => {
    const env = { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(await freePort()), TB_PROBE_WARMUP: '1', TB_PROBE_STEPS: '3' };
    const r = await runProbed([interp.python!, path.join(SCRIPTS, 'ddp_exit_check.py')], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(doneOf(r.processes[0])).toMatchObject({ reason: 'steps', steps: 4 });
    expect(reports(r.stdout)).toEqual([{ barrierInFinally: true }, { initializedAtExit: false }]);
    expect(r.stderr).not.toMatch(/process group was not released/);
  }, 120_000);

  it.skipIf(!interp.python)('leaves a script that ends by itself to release its own group', async () => {
    const env = { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(await freePort()) };
    const r = await runProbed([interp.python!, path.join(SCRIPTS, 'ddp_exit_check.py'), '--steps', '4'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(reports(r.stdout)).toEqual([{ barrierInFinally: true }, { initializedAtExit: false }]);
  }, 120_000);
});
