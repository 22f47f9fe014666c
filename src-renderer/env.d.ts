/// <reference types="vite/client" />
import type { TrainbenchBridge } from '@api/bridge';

declare global {
  interface Window {
    /** Present only inside the Electron window (exposed by the preload). */
    trainbench?: TrainbenchBridge;
  }
}

declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<object, object, unknown>;
  export default component;
}
