import type { Command, Option, OptionValues } from 'commander';
import { Help, InvalidArgumentError } from 'commander';

import { UsageError } from './usage-error';

const ENGINE_GROUP = "Engine target (no command after '--'):";
const SCRIPT_GROUP = "Script target (your own command after '--'):";

/**
 * Whether the command line had a '--' (commander drops it): words after the options are a
 * command to run only when '--' set them apart, so a stray word is refused, never launched.
 */
let separated = true;
export function noteArgv(argv: readonly string[]): void {
  separated = argv.includes('--');
}

/** The script target's side of a command: its options, declared on a command object of their own, and what runs it. */
export interface ScriptSide<S> {
  /**
   * The script side's options (never registered as a command of its own): read for their parsers, help
   * texts and defaults, which may differ from the engine side's for a shared flag (--steps, --repeat).
   */
  options: Command;
  run: (command: string[], flags: S) => Promise<void>;
}

/** "--model", "--model and --data", "--model, --data and --device". */
function names(options: Option[]): string {
  const flags = options.map((o) => o.long ?? o.flags);
  return flags.length > 1 ? `${flags.slice(0, -1).join(', ')} and ${flags[flags.length - 1]}` : flags[0];
}

/** Flags given for the other target are refused by name, never silently dropped. */
function refuseOptions(cmd: Command, given: Option[], target: 'engine' | 'script'): void {
  if (given.length === 0) return;
  const flags = names(given);
  const verb = given.length > 1 ? 'apply' : 'applies';
  if (target === 'engine') {
    throw new UsageError(
      `${flags} ${verb} to the engine target only (a model our engine trains), not to a script target (your own command after '--'): leave ${given.length > 1 ? 'them' : 'it'} out, or drop the command to measure an engine model`,
    );
  }
  throw new UsageError(
    `${flags} ${verb} to a script target only (your own command after '--'), not to the engine target: give the command (trainbench ${cmd.name()} [options] -- python3 train.py), or leave ${given.length > 1 ? 'them' : 'it'} out`,
  );
}

/** The shared flags whose meaning or default differ for a script, as the script side words them. */
function scriptReadings(shared: Option[], engine: Command): string {
  const engineHelp = engine.createHelp();
  const help = new Help();
  help.prepareContext({ helpWidth: process.stdout.columns || 80 });
  const rows = shared
    .map((o) => ({ term: help.optionTerm(o), description: help.optionDescription(o), engine: engineHelp.optionDescription(engine.options.find((e) => e.long === o.long)!) }))
    .filter((r) => r.description !== r.engine);
  if (rows.length === 0) return '';
  const width = Math.max(...rows.map((r) => r.term.length));
  return [`\nWith a command after '--', these read as a script target reads them:`, ...rows.map((r) => help.formatItem(r.term, width, r.description, help))].join('\n');
}

/**
 * Lets an engine command measure either target. Without a command it runs `runEngine`
 * as before; with one after `--` it runs the script side with exactly the flags its
 * options parse (their defaults where a shared flag was not given, their parser where
 * it was). A flag only one target reads is refused with the other.
 */
export function eitherTarget<E, S>(cmd: Command, runEngine: (flags: E) => Promise<void>, script: ScriptSide<S>): Command {
  const scriptLongs = new Set(script.options.options.map((o) => o.long));
  const engineLongs = new Set(cmd.options.map((o) => o.long));
  const engineOnly = cmd.options.filter((o) => !scriptLongs.has(o.long));
  const shared = script.options.options.filter((o) => engineLongs.has(o.long));
  const scriptOnly = script.options.options.filter((o) => !engineLongs.has(o.long));
  const scriptDefaults = script.options.opts();

  const readings = scriptReadings(shared, cmd);
  for (const o of engineOnly) o.helpGroup(ENGINE_GROUP);
  for (const o of scriptOnly) cmd.addOption(o.helpGroup(SCRIPT_GROUP));
  // The text of each shared flag as typed: the script's parser may be stricter than the engine's (--max-steps 0).
  const typed = new Map<string, string>();
  for (const o of shared) if (!o.isBoolean()) cmd.on(`option:${o.name()}`, (text: string) => typed.set(o.attributeName(), text));

  const scriptFlags = (self: Command): S => {
    const values = self.opts();
    const flags: Record<string, unknown> = {};
    for (const o of script.options.options) {
      const key = o.attributeName();
      const text = typed.get(key);
      if (self.getOptionValueSource(key) !== 'cli') flags[key] = scriptDefaults[key];
      else if (text === undefined || !o.parseArg) flags[key] = values[key];
      else {
        try {
          flags[key] = o.parseArg(text, scriptDefaults[key]);
        } catch (err) {
          if (!(err instanceof InvalidArgumentError)) throw err;
          self.error(`error: option '${o.flags}' argument '${text}' is invalid. ${err.message}`, { exitCode: err.exitCode, code: err.code });
        }
      }
    }
    return flags as S;
  };

  return cmd
    .usage('[options] [-- command...]')
    .argument('[command...]', "your own training command, after '--' (python3 train.py ..., torchrun ..., a shell script): measured as it is instead of an engine model")
    .addHelpText('after', readings)
    .action(async (command: string[], _opts: OptionValues, self: Command) => {
      const given = (o: Option) => self.getOptionValueSource(o.attributeName()) === 'cli';
      if (command.length === 0) {
        refuseOptions(self, scriptOnly.filter(given), 'script');
        return runEngine(self.opts() as E);
      }
      if (!separated) {
        throw new UsageError(
          `unexpected argument ${JSON.stringify(command.join(' '))}: put your own training command after '--' (trainbench ${self.name()} [options] -- python3 train.py)`,
        );
      }
      refuseOptions(self, engineOnly.filter(given), 'engine');
      return script.run(command, scriptFlags(self));
    });
}
