/** Hands a value to the browser as a .json file download (the desktop shell asks where to save it). */
export function downloadJson(fileName: string, value: unknown): void {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value)], { type: 'application/json' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.click();
  // Released later rather than at once, so a slow start of the download still finds the blob.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
