/**
 * A run's title as a list shows it (issue 27 item 10): what was measured, short. The kind is shown
 * beside it, so its prefix goes; a dataset's record count and test set stay in the run's own detail. A script
 * run is named from its file on, paths cut to their last part, so runs that differ in an argument
 * stay apart: "optimisation: script python3 /home/me/train.py --epochs 3" -> "train.py --epochs 3";
 * "training benchmark: mlp on fashion-mnist-train (60000 records)" -> "mlp on fashion-mnist-train".
 */
const KIND_PREFIX = /^(training benchmark|batch-size search|optimisation): /;
/** Longest script name a list shows; the whole command is in the run. */
const MAX_SCRIPT_CHARS = 60;

export function shortRunTitle(title: string): string {
  const t = title.replace(KIND_PREFIX, '');
  if (!t.startsWith('script ')) return t.replace(/ \(\d+ records\)(, test .+)?$/, '');
  const words = t.slice('script '.length).split(' ').filter(Boolean);
  // `python -m pkg.train`: from the module; else from the first argument that is a file (a path, or a name
  // with an extension); else the whole command.
  const module = words.indexOf('-m');
  // An extension starts with a letter: 127.0.0.1 (torchrun's --master_addr) or 0.5 is a value, not a file.
  const file = words.findIndex((w, i) => i > 0 && !w.startsWith('-') && (/\.[A-Za-z]\w*$/.test(w) || w.includes('/')));
  const from = module >= 0 && words[module + 1] ? module + 1 : Math.max(file, 0);
  const named = words
    .slice(from)
    .map((w) => (w.includes('/') && !w.startsWith('-') ? w.slice(w.lastIndexOf('/') + 1) : w))
    .join(' ');
  return named.length > MAX_SCRIPT_CHARS ? `${named.slice(0, MAX_SCRIPT_CHARS - 1)}…` : named;
}
