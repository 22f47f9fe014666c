import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import { ApiError } from '../api/errors';
import { joinLine, parseCollector } from '../api/script-target';
import { decodeFollow, isFollowCode } from '../core/nodes/followers';
import { decodeJoin, probeEnvOf } from '../core/script/probe-channel';
import { probeDir } from '../core/script/launcher';
import { UsageError } from './usage-error';

/** After a launch ends on the measuring node, this node's part gets this long to end by itself before it is stopped. */
const STOP_GRACE_MS = 5000;
/** How long after a part's own process exited what it left in its group is still stopped with the job. */
const GROUP_LINGER_MS = 60_000;
/** A line from the measuring node is a launch's variables: a few KiB. */
const MAX_LINE_BYTES = 1 << 20;
/** Parts started a second at most: a launch takes seconds, so a hub sending more is not Trainbench's (the latest waits). */
const MIN_LAUNCH_GAP_MS = 1000;

/** This node's part with the probe's variables, in a process group of its own (its torchrun and ranks end together). */
function start(command: string[], probe: Record<string, string>): ChildProcess {
  const inherited = process.env.PYTHONPATH;
  const env = { ...process.env, ...probe, PYTHONPATH: inherited ? `${probeDir()}${path.delimiter}${inherited}` : probeDir() };
  return spawn(command[0], command.slice(1), { env, stdio: 'inherit', detached: true });
}

function exited(child: ChildProcess, command: string[]): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    child.once('error', (err) => reject(new ApiError('E_BAD_INPUT', `cannot start ${JSON.stringify(command[0])}: ${err.message}`)));
    // A part ended by a signal exits as a shell says it: 128 plus the signal's number (137 for KILL).
    child.once('exit', (status, signal) => resolve(status ?? (signal ? 128 + (os.constants.signals[signal] ?? 15) : 1)));
  });
}

/**
 * Stops a part's whole process group: TERM, then KILL after the grace. Sent even when the part's own process has
 * exited: a process it left behind in its group is still this node's part.
 */
function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.pid === undefined) return Promise.resolve();
  const group = -child.pid;
  /** False once no process of the group is left (signal 0 only asks). */
  const signal = (s: NodeJS.Signals | 0) => {
    try {
      process.kill(group, s);
      return true;
    } catch {
      return false; // gone already
    }
  };
  if (!signal('SIGTERM')) return Promise.resolve();
  // Held (not unref'd) until the group is gone or killed: join must not exit and leave behind a process of its part
  // that ignores TERM (attack round 7, finding 3: one ran on, reparented, after join had exited).
  return new Promise<void>((resolve) => {
    const t0 = Date.now();
    const watch = setInterval(() => {
      // Killed (here or by a second signal's call): what is left are zombies for their new parent to reap.
      if (!signal(0) || killed.has(child)) {
        clearInterval(watch);
        resolve();
      } else if (Date.now() - t0 >= graceMs) {
        signal('SIGKILL');
        killed.add(child);
        clearInterval(watch);
        resolve();
      }
    }, Math.min(100, Math.max(1, graceMs)));
  });
}

/** Parts whose group was sent KILL. */
const killed = new WeakSet<ChildProcess>();

/**
 * The signals join passes on to its part (in a process group of its own, it hears none itself): a hang-up too, as
 * when the terminal or the ssh session that ran join closes. They stay caught until the part's group is gone: a
 * second one while join waits for it kills the group at once, instead of ending join with the group still there.
 */
const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** One launch's code: this node's part of that launch, its exit code this command's. */
async function joinOnce(code: string, command: string[]): Promise<void> {
  const child = start(command, decodeJoin(code));
  // The part runs in its own process group: a Ctrl-C or a TERM sent to this process is passed on to all of it.
  let waiting = false;
  const forward = () => void stopGroup(child, waiting ? 0 : STOP_GRACE_MS);
  for (const s of FORWARDED) process.on(s, forward);
  try {
    process.exitCode = await exited(child, command);
    // What the part left in its group (a process that ignores TERM included) ends with it, as a followed launch's
    // does (re-attack of round 7): join holds on until it is gone or killed.
    waiting = true;
    await stopGroup(child, STOP_GRACE_MS);
  } finally {
    for (const s of FORWARDED) process.off(s, forward);
  }
}

/**
 * A job's code: this node follows every launch of the benchmark or wizard that printed it, starting its part with
 * each launch's variables and ending it when the launch ends there, until the job ends (exit 0) or the measuring
 * node goes away (exit 1, its part stopped).
 */
async function follow(code: string, command: string[]): Promise<void> {
  const { host, port, token } = decodeFollow(code);
  const socket = net.connect({ host, port });
  let part: { n: number; child: ChildProcess; exitedAt?: number } | null = null;
  const stopPart = (graceMs: number): Promise<void> => {
    // A group whose leader exited long ago is gone, and its id may be another process's by now.
    if (part && (part.exitedAt === undefined || Date.now() - part.exitedAt < GROUP_LINGER_MS)) return stopGroup(part.child, graceMs);
    return Promise.resolve();
  };
  const forward = () => {
    void stopPart(0);
    socket.destroy();
  };
  for (const s of FORWARDED) process.on(s, forward);
  try {
    process.exitCode = await new Promise<number>((resolve, reject) => {
      let buffered = '';
      let ended = false;
      let lastStart = 0;
      let waiting: ReturnType<typeof setTimeout> | null = null;
      const launchNow = (n: number, probe: Record<string, string>) => {
        waiting = null;
        if (socket.destroyed) return;
        void stopPart(0); // a part still running belongs to a launch that has ended there
        lastStart = Date.now();
        let child: ChildProcess;
        try {
          child = start(command, probe);
        } catch (err) {
          // E2BIG from variables a hub made too large, or the like: this launch is not run, join goes on.
          process.stderr.write(`trainbench join: launch ${n} not started: ${(err as Error).message}\n`);
          return;
        }
        // Kept after it exits: what it left in its process group is stopped with the job.
        const mine: { n: number; child: ChildProcess; exitedAt?: number } = { n, child };
        part = mine;
        exited(child, command).then(
          (status) => {
            mine.exitedAt = Date.now();
            if (!socket.destroyed) socket.write(`${JSON.stringify({ type: 'exited', n, code: status })}\n`);
          },
          (err: Error) => reject(err),
        );
      };
      /** Starts this node's part of launch n, or after the gap since the last start (a newer launch replaces it). */
      const launchSoon = (n: number, probe: Record<string, string>) => {
        if (waiting) clearTimeout(waiting);
        const wait = lastStart + MIN_LAUNCH_GAP_MS - Date.now();
        if (wait <= 0) launchNow(n, probe);
        else waiting = setTimeout(() => launchNow(n, probe), wait);
      };
      socket.setEncoding('utf8');
      socket.on('connect', () => {
        socket.write(`${JSON.stringify({ type: 'follow', token, node: os.hostname().slice(0, 255) })}\n`);
        process.stderr.write(`trainbench join: following the job at ${host}:${port}\n`);
      });
      socket.on('error', (err) => reject(new ApiError('E_BAD_INPUT', `cannot reach the measuring node at ${host}:${port}: ${err.message}`)));
      socket.on('close', () => {
        if (waiting) clearTimeout(waiting);
        // Answered once the part's group is gone or killed: the signals stay caught until then.
        void stopPart(STOP_GRACE_MS).then(() => {
          if (ended) resolve(0);
          else reject(new ApiError('E_CANCELLED', 'the measuring node closed the job before it ended (refused: a wrong or old code, or it stopped); this node\'s part was stopped'));
        });
      });
      socket.on('data', (chunk: string) => {
        buffered += chunk;
        if (buffered.length > MAX_LINE_BYTES && !buffered.includes('\n')) return socket.destroy();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          let m: { type?: unknown; n?: unknown; env?: unknown };
          try {
            m = JSON.parse(line) as typeof m;
          } catch {
            continue;
          }
          if (m.type === 'launch' && typeof m.n === 'number') {
            let probe: Record<string, string>;
            try {
              probe = probeEnvOf(m.env, (why) => new Error(why));
            } catch (err) {
              process.stderr.write(`trainbench join: launch ${m.n} ignored: ${(err as Error).message}\n`);
              continue;
            }
            launchSoon(m.n, probe);
          } else if (m.type === 'stop') {
            if (waiting) clearTimeout(waiting); // a launch not started yet has ended there already
            waiting = null;
            if (part && part.n === m.n) void stopPart(STOP_GRACE_MS);
          }
          else if (m.type === 'done') ended = true;
        }
      });
    });
  } finally {
    for (const s of FORWARDED) process.off(s, forward);
  }
}

/**
 * `trainbench join CODE -- command...` on each other node of a job across machines (issue 40): runs this node's part
 * of the job (its torchrun) with the probe in every rank, reporting to the collector of the benchmark or wizard that
 * printed the code: every launch of it, once started. Nothing is measured or saved here; the command's output is its
 * own.
 */
async function join(code: string, command: string[]): Promise<void> {
  if (command.length === 0) throw new UsageError("no command to run: put this node's part of the job after '--' (e.g. trainbench join CODE -- torchrun --nnodes 2 --node_rank 1 ... train.py)");
  await (isFollowCode(code) ? follow(code, command) : joinOnce(code, command));
}

export function joinCommand(): Command {
  return new Command('join')
    .description("run this node's part of a job across machines with the probe, reporting to the benchmark that printed CODE (benchmark-training --collector)")
    .argument('<code>', 'the join code the benchmark or wizard printed (with --collector)')
    .argument('[command...]', "this node's part of the job, after '--'")
    .action(join);
}

/** `--collector 10.0.0.1` or `10.0.0.1:29400` (an IPv6 address in brackets: `[fd00::1]:29400`). */
export function collectorArg(value: string): { host: string; port: number } {
  try {
    return parseCollector(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** What the measuring node says once, whatever --progress says: without it the other nodes have nothing to follow. */
export const joinNote = (code: string) => `on each other node, start its part of the job once (it follows every launch of this one) with\n  ${joinLine(code)}\n`;
