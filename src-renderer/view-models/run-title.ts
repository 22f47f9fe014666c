/**
 * A run's title as a list shows it (issue 27 item 10): what was measured, short. The kind is shown
 * beside it, so its prefix goes; a dataset's record count and a script's arguments stay in the
 * run's own detail. "optimisation: script python3 /home/me/train.py --epochs 3" -> "train.py";
 * "training benchmark: mlp on fashion-mnist-train (60000 records)" -> "mlp on fashion-mnist-train".
 */
const KIND_PREFIX = /^(training benchmark|batch-size search|optimisation): /;

export function shortRunTitle(title: string): string {
  const t = title.replace(KIND_PREFIX, '');
  if (!t.startsWith('script ')) return t.replace(/ \(\d+ records\)$/, '');
  const words = t.slice('script '.length).split(' ').filter(Boolean);
  // `python -m pkg.train`: the module names it; else the first argument that is a file (a path, or a name with
  // an extension), else the program.
  const module = words.indexOf('-m');
  const named = module >= 0 && words[module + 1] ? words[module + 1] : (words.find((w, i) => i > 0 && !w.startsWith('-') && (/\.\w+$/.test(w) || w.includes('/'))) ?? words[0] ?? t);
  return named.slice(named.lastIndexOf('/') + 1);
}
