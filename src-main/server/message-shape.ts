/**
 * The JSON values a text holds (objects, arrays and the items and members in them), counted without parsing it up
 * to `stopAt`: the bytes `{`, `[`, `,` and `:` outside strings. Parsing costs by values, not bytes: a 16 MiB message
 * of `[{},{},...]` took 1.8 s and 2 GiB to parse before its request was refused (re-attack 23), and messages just
 * under 64 KiB of them, 500 a second, a core (re-attack 24); one long string of that size parses in milliseconds.
 * About 40 ms for 16 MiB.
 */
export function countValues(text: Buffer, stopAt: number): number {
  let count = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const b = text[i];
    if (inString) {
      if (b === 0x5c) i++; // a backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if ((b === 0x7b || b === 0x5b || b === 0x2c || b === 0x3a) && ++count >= stopAt) return count;
  }
  return count;
}
