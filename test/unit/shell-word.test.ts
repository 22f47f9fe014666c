// Issue 41, F1: a command, env value, cwd or title read from a file is shown with its control characters
// escaped (a planted ESC, CR or OSC must not redraw a terminal), and a quoted word stays one a shell reads
// back as it was.
import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { hasVisible, maxColumns, printable, shellLine, shellWord, visibleBlanks } from '../../src-main/api/shell-word';
import { jsonText, textOut } from '../../src-main/cli/json-out';
import { splitCommandLine } from '../../src-renderer/view-models/script-target-form';

/** Any C0 or C1 control character or DEL. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const planted = ['touch x;   \u3000\u00a0 python3 train.py', 'train.py\x1b[2K\rharmless.py', 'a\x1b]0;title\x07b', 'csi\u009b31m', 'del\x7f', 'tab\tnew\nline', "it's a \\x1b", 'train.py\u2064', 'tag\u{e0041}s'];

describe('printable', () => {
  it('escapes C0, C1 and DEL as \\x1b, \\r, \\u009b, and leaves other text as it is', () => {
    expect(printable('a\x1b[2K\rb\u009b\x7f\x00é ü/\\')).toBe('a\\x1b[2K\\rb\\u009b\\x7f\\x00é ü/\\');
    expect(printable('python3 train.py --epochs 3')).toBe('python3 train.py --epochs 3');
    for (const word of planted) expect(printable(word)).not.toMatch(RAW_CONTROL);
  });

  it('escapes the marks that reorder or break what a page shows', () => {
    expect(printable('a\u202eb\u2066c\u2028d')).toBe('a\\u202eb\\u2066c\\u2028d');
  });

  it('escapes the invisible characters a word could hide another in (re-attack 13)', () => {
    expect(printable('tra\u200bin.py\ufeff \u00adx\u2060y\u200dz')).toBe('tra\\u200bin.py\\ufeff \\u00adx\\u2060y\\u200dz');
  });

  it('escapes by Unicode category: invisible operators, tag characters, variation selectors and fillers a list missed (re-attack 8)', () => {
    expect(printable('train.py\u2064')).toBe('train.py\\u2064');
    expect(printable('a\u{e0041}b\ufe0fc\u3164d\u034fe\u180ef\ufffbg\u206ah\u0600i')).toBe('a\\U000e0041b\\ufe0fc\\u3164d\\u034fe\\u180ef\\ufffbg\\u206ah\\u0600i');
    // Letters, marks and symbols that draw something stay as they are.
    expect(printable('naïve café 日本 🙂 e\u0301')).toBe('naïve café 日本 🙂 e\u0301');
  });

  it('escapes every default-ignorable and unassigned code point: the Khmer, Mongolian and specials a category missed (re-attack 9)', () => {
    const missed = [0x17b4, 0x17b5, 0x180b, 0x180c, 0x180d, 0x180f, 0x2065, 0xfff0, 0xfff8, 0xe0000, 0xe0002, 0xe001f, 0xe0080, 0xe00ff, 0xe01f0, 0xe0fff];
    for (const code of missed) {
      const word = `tr${String.fromCodePoint(code)}ain.py`;
      expect(printable(word), code.toString(16)).toMatch(/^tr\\(u|U0*)[0-9a-f]+ain\.py$/);
      expect(shellWord(word), code.toString(16)).toMatch(/^\$'tr\\/);
    }
    // Unassigned today.
    expect(printable('a\u0378b')).toBe('a\\u0378b');
  });

  it('escapes what draws as nothing or as a font pleases, and combining marks past the third in a row (re-attack 12)', () => {
    // Private use (a font's own glyph, or none), the blank braille pattern, the object replacement character.
    expect(printable('tag\ue000x \u{10fffd} \u2800\u2800 \ufffc')).toBe('tag\\ue000x \\U0010fffd \\u2800\\u2800 \\ufffc');
    // A tower of sixty marks over a letter keeps three; real text (Vietnamese in NFD, Devanagari) is as it was.
    const tower = printable(`A${'\u030d'.repeat(60)}B`);
    expect(tower.startsWith('A\u030d\u030d\u030d\\u030d')).toBe(true);
    expect(tower.match(/\\u030d/g)).toHaveLength(57);
    for (const real of ['Vie\u0302\u0323t Nam', 'क्षत्रिय', 'ﻻ', 'e\u0301\u0300']) expect(printable(real)).toBe(real);
  });

  it('hasVisible: a name of blanks, marks and invisible characters has nothing to see', () => {
    for (const blank of ['', ' ', '\u2800\u2800\u2800', '\u200b\u3164', '\u030d\u030d', '\ue000']) expect(hasVisible(blank), JSON.stringify(blank)).toBe(false);
    for (const seen of ['a', ' baseline ', 'x\u2800', '実験']) expect(hasVisible(seen), seen).toBe(true);
  });

  it('keeps a newline with `lines` (a message of several lines), escaping the rest', () => {
    expect(printable('one\ntwo\r\x1b[1A', { lines: true })).toBe('one\ntwo\\r\\x1b[1A');
  });
});

describe('jsonText and textOut (what the CLI writes)', () => {
  it('jsonText writes each character printable() escapes as \\u escapes, a pair past U+FFFF: the same JSON to a parser', () => {
    const value = { title: 'a\x1b]0;t\x07\u009b\u202e\u17b4\u{e0041}b', plain: 'naïve 日本 🙂' };
    const text = jsonText(value);
    expect(text).toBe('{"title":"a\\u001b]0;t\\u0007\\u009b\\u202e\\u17b4\\udb40\\udc41b","plain":"naïve 日本 🙂"}');
    expect(JSON.parse(text)).toEqual(value);
    // Indented, its own newlines stay: the answer is still read line by line.
    expect(jsonText({ a: 1, b: '\n' }, 2)).toBe('{\n  "a": 1,\n  "b": "\\n"\n}');
  });

  it('textOut keeps line breaks and escapes the rest', () => {
    expect(textOut('verdict  fine\n\x1b[1A\x1b[2K\u17b4faster')).toBe('verdict  fine\n\\x1b[1A\\x1b[2K\\u17b4faster');
  });
});

describe('shellWord', () => {
  it('quotes a word with a control character in $\'…\', shown escaped', () => {
    expect(shellWord('train.py\x1b[2K\rharmless.py')).toBe("$'train.py\\x1b[2K\\rharmless.py'");
    expect(shellWord("it's\x1b")).toBe("$'it\\'s\\x1b'");
    for (const word of planted) expect(shellWord(word)).not.toMatch(RAW_CONTROL);
  });

  it('escapes the blanks that would hide the start of a word: a run of three spaces or more, and every non-ASCII space (second re-attack of issue 41)', () => {
    expect(shellWord(`touch x;${' '.repeat(5)}python3 train.py`)).toBe("$'touch x;\\x20\\x20\\x20\\x20\\x20python3 train.py'");
    expect(shellWord('a\u3000b\u00a0c')).toBe("$'a\\u3000b\\u00a0c'");
    // Two spaces in a row stay as they are, in single quotes.
    expect(shellWord('a  b')).toBe("'a  b'");
    // Text that is not a word (the settings' JSON) shows them the same way.
    expect(visibleBlanks('{"a":"x    y\u00a0z"}')).toBe('{"a":"x\\x20\\x20\\x20\\x20y\\u00a0z"}');
  });

  it('leaves safe words bare and single-quotes the rest, as before', () => {
    expect(shellLine(['python3', 'train.py', '--lr=0.1'])).toBe('python3 train.py --lr=0.1');
    expect(shellWord('my file.py')).toBe("'my file.py'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
  });

  it('is read back by bash as the very bytes: the quoting is unambiguous', () => {
    const words = [...planted, 'plain', 'my file', "quote'd", 'back\\slash', '$HOME'];
    const out = execFileSync('bash', ['-c', `printf '%s\\0' ${shellLine(words)}`], { env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    expect(out.toString('utf8').split('\0').slice(0, -1)).toEqual(words);
  });

  it('is read back by the form that edits a command (splitCommandLine)', () => {
    const words = [...planted, 'plain', 'my file', "quote'd"];
    expect(splitCommandLine(shellLine(words))).toEqual(words);
  });
});

describe('maxColumns', () => {
  it('counts the most columns a terminal can draw: ASCII one, every other code point two, marks included', () => {
    expect(maxColumns('python3 train.py')).toBe(16);
    expect(maxColumns('\u3000'.repeat(10))).toBe(20);
    expect(maxColumns('学习率')).toBe(6);
    expect(maxColumns('🚀x')).toBe(3);
    // The third re-attack: a Tangut character and three spacing marks, drawn five columns wide, counted one before.
    expect(maxColumns('\u{17000}\u0903\u0903\u0903')).toBe(8);
    expect(maxColumns('e\u0301')).toBe(3);
  });
});
