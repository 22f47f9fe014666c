import type { BrowserWindowConstructorOptions } from 'electron';

/** Security defaults of docs/architecture.md; kept in one place so a test can check them. */
export function mainWindowOptions(preloadPath: string): BrowserWindowConstructorOptions {
  return {
    width: 1360,
    height: 860,
    minWidth: 960,
    minHeight: 600,
    title: 'Trainbench',
    // Shown on ready-to-show, so the user never sees a blank white frame.
    show: false,
    backgroundColor: '#0f1419',
    webPreferences: {
      preload: preloadPath,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
    },
  };
}
