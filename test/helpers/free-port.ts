// A port free now on 127.0.0.1, for a test's torchrun or accelerate rendezvous: their default (29500) is shared by every
// test file that runs in parallel, and two jobs on one port end one of them with a crashed rank.
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
