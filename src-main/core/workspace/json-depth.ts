// JSON from the workspace is data from another rig: its shape is checked before parsing, so a planted file nested
// 100,000 deep, or holding an array of 200,000 bad entries (a schema builds one error per entry, seconds of the
// server's time), is named for what it is instead of costing a parser's stack or a schema's time.

/** The most entries an array in a file Trainbench writes holds: ranks of a job (4,096 at most), a curve's 2,000 points. */
export const MAX_JSON_ARRAY_ENTRIES = 16_384;
/** The most entries of all its arrays together, as a multiple of the most in one (nested arrays add up). */
const TOTAL_ENTRIES_FACTOR = 8;

/**
 * What is wrong with the shape of JSON text, or null: more than `maxDepth` objects and arrays inside one another, an
 * array of more than `maxArray` entries or an object of as many members, or more than 8 times that in all its arrays. Counted without parsing (no recursion), brackets and commas in strings skipped.
 */
export function jsonShapeProblem(text: string, maxDepth: number, maxArray = MAX_JSON_ARRAY_ENTRIES): string | null {
  // Per open bracket: the commas seen directly inside it so far (-1 for an object, whose commas are not entries).
  const commas = new Int32Array(maxDepth + 1);
  // And an object's members, as many at most as an array's entries: a map (env, overrides) of 300,000 keys made a
  // schema build one error per key (attack round 7, finding 4).
  const members = new Int32Array(maxDepth + 1);
  let depth = 0;
  let inString = false;
  let total = 0;
  const maxTotal = TOTAL_ENTRIES_FACTOR * maxArray;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character, a quote included
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return `nested too deep (more than ${maxDepth} levels of objects and arrays)`;
      commas[depth] = c === 0x5b ? 0 : -1;
      members[depth] = 0;
    } else if (c === 0x7d || c === 0x5d) depth = Math.max(0, depth - 1);
    else if (c === 0x2c && depth > 0 && commas[depth] >= 0) {
      if (++commas[depth] >= maxArray) return `holding an array of more than ${maxArray.toLocaleString('en-US')} entries`;
      if (++total >= maxTotal) return `holding more than ${maxTotal.toLocaleString('en-US')} array entries in all`;
    } else if (c === 0x2c && depth > 0 && ++members[depth] >= maxArray) return `holding an object of more than ${maxArray.toLocaleString('en-US')} members`;
  }
  return null;
}
