/**
 * Whether a JSON text holds more than `max` values (objects, arrays and the items and members in them), read
 * without parsing it: the bytes `{`, `[`, `,` and `:` outside strings. A page's large message is a report saved
 * from the editor, one long string; a 16 MiB message of `[{},{},...]` took 1.8 s and 2 GiB to parse before its
 * request was refused (re-attack 23). About 10 ms for 16 MiB.
 */
export function holdsMoreValues(text: Buffer, max: number): boolean {
  let count = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const b = text[i];
    if (inString) {
      if (b === 0x5c) i++; // a backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if ((b === 0x7b || b === 0x5b || b === 0x2c || b === 0x3a) && ++count > max) return true;
  }
  return false;
}
