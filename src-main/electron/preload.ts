/** Sandboxed preload: bundled into one file (scripts/bundle-preload.mjs), since sandboxed preloads cannot require our modules. */
import { contextBridge, ipcRenderer } from 'electron';

import { IPC_CALL_CHANNEL, IPC_EVENT_CHANNEL } from '../api/bridge';
import { buildBridge } from './preload-api';

contextBridge.exposeInMainWorld('trainbench', buildBridge(ipcRenderer, IPC_CALL_CHANNEL, IPC_EVENT_CHANNEL));
