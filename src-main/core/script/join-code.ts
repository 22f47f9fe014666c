// A job across machines (issue 40): the ranks on the other nodes need the collector's address and the launch's token,
// warm-up, steps and overrides. They travel as one join code, which `trainbench join CODE -- command` on each other
// node (or TB_JOIN in the environment srun or a PyTorchJob passes on) turns back into the probe's variables.
import { ApiError } from '../../api/errors';

const PREFIX = 'tbj1.';
/** The probe's variables a join code may carry: nothing else reaches the other node's environment. */
const KEYS = ['TB_PROBE_ADDR', 'TB_PROBE_TOKEN', 'TB_PROBE_WARMUP', 'TB_PROBE_STEPS', 'TB_PROBE_SET', 'TB_PROBE_SEED', 'TB_PROBE_PEAK', 'TB_PROBE_COLLECTIVES'] as const;
/** A code is a few hundred characters; overrides make it longer, never this long. */
const MAX_CODE_CHARS = 16_384;

export function encodeJoin(env: Readonly<Record<string, string>>): string {
  const carried = Object.fromEntries(KEYS.filter((k) => env[k] !== undefined).map((k) => [k, env[k]]));
  return PREFIX + Buffer.from(JSON.stringify(carried)).toString('base64url');
}

/** The probe's variables from a join code; a code that is not one is an error naming what is wrong with it. */
export function decodeJoin(code: string): Record<string, string> {
  const bad = (why: string) => new ApiError('E_BAD_INPUT', `${JSON.stringify(code.slice(0, 40))}${code.length > 40 ? '…' : ''} is not a join code: ${why} (benchmark-training --collector prints the code to use)`);
  if (code.length > MAX_CODE_CHARS) throw bad(`it is ${code.length} characters long, more than ${MAX_CODE_CHARS}`);
  if (!code.startsWith(PREFIX)) throw bad(`it does not start with ${PREFIX}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(code.slice(PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    throw bad('its body does not decode');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw bad('its body is not an object');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!(KEYS as readonly string[]).includes(k)) throw bad(`it names ${JSON.stringify(k.slice(0, 40))}, not one of the probe's variables`);
    if (typeof v !== 'string' || v.includes('\0')) throw bad(`its ${k} is not a plain string`);
    env[k] = v;
  }
  if (!env.TB_PROBE_ADDR || !env.TB_PROBE_TOKEN) throw bad('it has no collector address or token');
  return env;
}
