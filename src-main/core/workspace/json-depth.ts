// JSON from the workspace is data from another rig: nesting is counted before parsing, so a planted file
// nested 100,000 deep is named for what it is instead of costing a parser's stack or a schema's time.

/** Whether JSON text opens more than `max` objects and arrays inside one another; counted without parsing (no recursion), brackets in strings skipped. */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character, a quote included
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
