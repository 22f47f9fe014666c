import { printable } from '@api/shell-word';
import { SCRIPT_OVERRIDE_WORDS } from '@api/script-target';
import type { ScriptOverrideKey } from '@api/script-target';

/** An override key as a person names it ("amp.dtype": "mixed precision"); an unknown key as it is. */
export function overrideWords(key: string): string {
  return (SCRIPT_OVERRIDE_WORDS as Readonly<Record<string, string>>)[key] ?? key;
}

const KEYS = Object.keys(SCRIPT_OVERRIDE_WORDS) as ScriptOverrideKey[];

/**
 * A change's label in words: the wizard labels a script change by its key ("amp.dtype fp32 -> bf16"), which is
 * right for --set but not for a person: that key becomes its words ("mixed precision fp32 -> bf16").
 */
export function changeLabelWords(label: string): string {
  const key = KEYS.find((k) => label === k || label.startsWith(`${k} `) || label.startsWith(`${k}=`));
  // From a saved state or run (workspace files): escaped as everything shown from a file is.
  return printable(key ? `${SCRIPT_OVERRIDE_WORDS[key]}${label.slice(key.length).replace(/^=/, ' ')}` : label);
}
