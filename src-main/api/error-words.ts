import { printable } from './shell-word';

/**
 * What each contract code means to a person, said before the message; '' where the message says it all
 * (a refused input names what is wrong). The code itself stays out of the text: the UI keeps it for a tooltip,
 * the CLI for its exit code and --json.
 */
export const CODE_WORDS: Readonly<Record<string, string>> = {
  E_OOM: 'out of memory',
  E_BAD_INPUT: '',
  E_BAD_REQUEST: '',
  E_DATA: '',
  E_CUDA: 'the GPU failed',
  E_CANCELLED: 'cancelled',
  E_INTERNAL: 'unexpected error',
  E_ENGINE_CRASHED: 'the engine stopped',
  E_TIMEOUT: 'timed out',
  E_UNKNOWN_METHOD: 'not supported by this version',
  E_DISCONNECTED: 'disconnected',
  E_SCRIPT: '',
  E_FORBIDDEN: '',
};

/**
 * A code and its message as words: "out of memory: …", the message alone for a refused input, never the code.
 * A message may quote a workspace file (a planted title or cwd in a saved state): its control and invisible
 * characters are shown escaped, wherever the text is shown (a page, a terminal).
 */
export function errorWords(code: string, raw: string): string {
  const message = printable(raw, { lines: true });
  const words = CODE_WORDS[code] ?? '';
  // The message may say it already ("cancelled after 3 trials"): no "cancelled: … cancelled".
  if (!words || message.toLowerCase().includes(words)) return message || words || 'failed';
  return message ? `${words}: ${message}` : words;
}

const CODE_AT_START = /^(E_[A-Z_]+): ?/;
const CODE_ANYWHERE = /\bE_[A-Z_]+\b/g;

/**
 * Text the service wrote with a code in it (a run's "E_OOM: …" error, a verdict's "(20: E_OOM)") as words:
 * a leading code as errorWords says it, any other one by its words alone.
 */
export function withoutCodes(text: string): string {
  const lead = CODE_AT_START.exec(text);
  const body = lead ? errorWords(lead[1], text.slice(lead[0].length)) : printable(text, { lines: true });
  return body.replace(CODE_ANYWHERE, (code) => CODE_WORDS[code] || 'failed');
}

/** The code of a "E_X: …" text, for a tooltip (support asks for it); '' when it has none. */
export function codeOf(text: string | null | undefined): string {
  return text ? (CODE_AT_START.exec(text)?.[1] ?? '') : '';
}
