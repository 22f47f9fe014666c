import path from 'node:path';

import { createServices } from '../core/services';
import { packageRoot } from '../engine/package-root';
import { isLoopbackHost } from '../server/auth';
import { startServer } from '../server/serve';
import { UsageError } from './usage-error';

export interface ServeFlags {
  port: number;
  host: string;
  workspace: string;
  allowScripts?: boolean;
  collectorHost?: string;
}

/** `trainbench serve`: the workbench in a browser, for rigs without a screen. */
export async function serveCommand(opts: ServeFlags): Promise<void> {
  const services = await createServices({ workspaceDir: opts.workspace, allowScripts: opts.allowScripts === true, ...(opts.collectorHost ? { collectorHost: opts.collectorHost } : {}), downloads: { offered: true }, keepTelemetryHistory: true });
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    await services.engine.start();
    server = await startServer({
      services,
      rendererDir: path.join(packageRoot(), 'dist', 'renderer'),
      host: opts.host,
      port: opts.port,
    });
  } catch (err) {
    // The engine's host process and the telemetry pollers would keep the command alive with nothing served.
    await services.dispose();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${opts.port} on ${opts.host} is in use: stop what holds it, or choose another with --port`);
    if (code === 'EADDRNOTAVAIL') throw new UsageError(`--host ${opts.host} is not an address of this machine`);
    throw err;
  }
  // A promise some request left unhandled must not end a server that any page can reach; say so and go on.
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`trainbench serve: unhandled rejection (kept serving): ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`);
  });
  const [first, ...others] = server.urls;
  process.stdout.write(`Trainbench is serving the workbench at\n  ${first}\n`);
  if (others.length) process.stdout.write(`and from other machines at\n${others.map((u) => `  ${u}\n`).join('')}`);
  process.stdout.write(`workspace: ${services.workspace.root}\n`);
  if (opts.allowScripts) process.stdout.write('scripts: allowed (--allow-scripts): whoever holds the token can run commands as you\n');
  if (opts.collectorHost) process.stdout.write(`jobs across machines: requests may listen for other nodes' ranks on ${opts.collectorHost} (--collector-host)\n`);
  if (!isLoopbackHost(opts.host.toLowerCase())) {
    process.stdout.write(`warning: listening on ${opts.host}, not loopback; anyone who can reach it and has the token can use it\n`);
  }
  const shutdown = async () => {
    await server.close();
    await services.dispose();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
  // Windows has no SIGTERM; Ctrl-Break arrives as SIGBREAK.
  if (process.platform === 'win32') process.once('SIGBREAK', () => void shutdown());
}
