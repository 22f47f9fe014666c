/**
 * A folder as the system enters it, for what a person reads before agreeing to run a command there: "." and ".."
 * resolved, repeated separators one (`/home/me/project/../../tmp/evil` is `/tmp/evil`). Pure, for the CLI's consent
 * and the app's "Run this command?" alike; links are not followed (nothing is read). A relative path stays as written.
 */
export function resolvedFolder(folder: string): string {
  const windows = /^[A-Za-z]:[\\/]/.exec(folder);
  const root = windows ? `${folder.slice(0, 2)}\\` : folder.startsWith('/') ? '/' : null;
  if (root === null) return folder;
  const parts: string[] = [];
  for (const part of folder.slice(root.length).split(windows ? /[\\/]+/ : /\/+/)) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return root + parts.join(windows ? '\\' : '/');
}
