/** Characters a POSIX shell reads back as they are, unquoted. */
const SAFE = /^[A-Za-z0-9_./:,=@%+-]+$/;

/** One word as a POSIX shell reads it back: as it is when safe, else in single quotes (a quote inside closed, escaped, reopened). */
export function shellWord(word: string): string {
  return SAFE.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
