/** Electron main process: a thin shell over the shared services. The only code importing `electron`. */
import path from 'node:path';

import { app, BrowserWindow, dialog, ipcMain, Menu, session, shell } from 'electron';

import type { CallOutcome } from '../api/bridge';
import { IPC_CALL_CHANNEL, IPC_EVENT_CHANNEL } from '../api/bridge';
import { isSourceShellMethod } from '../api/source-uploads';
import { toApiError } from '../core/api-router';
import type { Services } from '../core/services';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { packageRoot } from '../engine/package-root';
import { menuTemplate } from './menu';
import { appResponseHeaders, isAppUrl, isExternalLink } from './navigation';
import { sourceShell } from './source-copy';
import { utilityHostLauncher } from './utility-launcher';
import { mainWindowOptions } from './window-options';

const DOCS_URL = 'https://github.com/trainbench/trainbench#readme';
const root = packageRoot();
const rendererIndex = path.join(root, 'dist', 'renderer', 'index.html');
const appUrl = new URL(`file://${rendererIndex.replace(/\\/g, '/')}`).toString();

function workspaceFromArgs(argv: string[]): string | null {
  const i = argv.indexOf('--workspace');
  return i >= 0 && argv[i + 1] ? path.resolve(argv[i + 1]) : null;
}

function createWindow(): BrowserWindow {
  const win = new BrowserWindow(mainWindowOptions(path.join(__dirname, 'preload.js')));
  win.once('ready-to-show', () => win.show());
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (isExternalLink(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (event, url) => {
    if (!isAppUrl(url, appUrl)) event.preventDefault();
  });
  // A redirect is a navigation the page did not ask for: the same policy.
  win.webContents.on('will-redirect', (event, url) => {
    if (!isAppUrl(url, appUrl)) event.preventDefault();
  });
  // The page holds unsaved edits (a report's draft) and asked to stay: Electron would keep the window open
  // without a word, so the person is asked, as a browser asks.
  win.webContents.on('will-prevent-unload', (event) => {
    const choice = dialog.showMessageBoxSync(win, {
      type: 'question',
      buttons: ['Leave and lose the edits', 'Stay'],
      defaultId: 1,
      cancelId: 1,
      message: 'A report has unsaved edits.',
      detail: 'Leaving now loses them. Stay, then Save in Reports, to keep them.',
    });
    if (choice === 0) event.preventDefault();
  });
  void win.loadFile(rendererIndex);
  return win;
}

/** The open-file dialog for data files to add to the workspace's sources/ folder. */
async function chooseSourceFiles(parent: BrowserWindow | null): Promise<string[]> {
  const options: Electron.OpenDialogOptions = {
    title: 'Add data files to the sources folder',
    buttonLabel: 'Add',
    properties: ['openFile', 'multiSelections'],
  };
  const result = parent ? await dialog.showOpenDialog(parent, options) : await dialog.showOpenDialog(options);
  return result.canceled ? [] : result.filePaths;
}

function registerIpc(services: Services): void {
  const sources = sourceShell({ workspace: services.workspace });
  ipcMain.handle(IPC_CALL_CHANNEL, async (event, method: unknown, params: unknown): Promise<CallOutcome> => {
    // Only our own page may call in.
    if (!event.senderFrame || !isAppUrl(event.senderFrame.url, appUrl)) {
      return { ok: false, error: { code: 'E_BAD_REQUEST', message: 'caller is not the Trainbench window' } };
    }
    try {
      const name = String(method);
      // Adding source files needs this shell's dialog: answered here, not by the services' router.
      if (isSourceShellMethod(name)) {
        const sender = event.sender;
        const window = {
          chooseFiles: () => chooseSourceFiles(BrowserWindow.fromWebContents(sender)),
          send: (eventName: string, data: unknown) => {
            if (!sender.isDestroyed()) sender.send(IPC_EVENT_CHANNEL, eventName, data);
          },
        };
        return { ok: true, result: await sources(name, params, window) };
      }
      // Each window is its own caller: one window's queued work takes turns with another's.
      return { ok: true, result: await services.router.dispatch(name, params, event.sender) };
    } catch (err) {
      return { ok: false, error: toApiError(err).toPayload(services.workspace.root) };
    }
  });
  services.events.subscribe((name, data) => {
    for (const win of BrowserWindow.getAllWindows()) win.webContents.send(IPC_EVENT_CHANNEL, name, data);
  });
}

/** The export dialog for reports: the person picks where a report's markdown and figures go. */
async function chooseExportFolder(suggestedName: string): Promise<string | null> {
  const parent = BrowserWindow.getFocusedWindow() ?? BrowserWindow.getAllWindows()[0];
  const options: Electron.OpenDialogOptions = {
    title: `Export report ${suggestedName}`,
    buttonLabel: 'Export here',
    properties: ['openDirectory', 'createDirectory'],
  };
  const result = parent ? await dialog.showOpenDialog(parent, options) : await dialog.showOpenDialog(options);
  return result.canceled || result.filePaths.length === 0 ? null : result.filePaths[0];
}

async function start(): Promise<void> {
  await app.whenReady();
  // No page of ours needs camera, notifications or the like: every request and check is denied.
  session.defaultSession.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
  session.defaultSession.setPermissionCheckHandler(() => false);
  // The Content Security Policy as a response header on the app's own files, as serve mode sends it.
  session.defaultSession.webRequest.onHeadersReceived((details, callback) =>
    callback({ responseHeaders: appResponseHeaders(details.url, details.responseHeaders ?? {}, path.dirname(rendererIndex)) }),
  );

  const workspaceDir = workspaceFromArgs(process.argv) ?? defaultWorkspaceDir();
  const services = await createServices({
    workspaceDir,
    engine: { launcher: utilityHostLauncher },
    chooseFolder: chooseExportFolder,
    allowScripts: true,
    keepTelemetryHistory: true,
  });
  registerIpc(services);
  void services.engine.start().catch(() => undefined); // failures are shown through engine.status

  Menu.setApplicationMenu(
    Menu.buildFromTemplate(
      menuTemplate(
        {
          openWorkspaceFolder: () => void shell.openPath(services.workspace.root),
          openDocs: () => void shell.openExternal(DOCS_URL),
        },
        process.platform === 'darwin',
        !app.isPackaged,
      ),
    ),
  );
  createWindow();

  app.on('activate', () => {
    if (BrowserWindow.getAllWindows().length === 0) createWindow();
  });
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  app.on('before-quit', () => {
    void services.dispose();
  });
}

start().catch((err: unknown) => {
  console.error(`Trainbench failed to start: ${(err as Error).message}`);
  app.exit(1);
});
