// Lets the type check of the tests see single-file components (vitest compiles them with the Vue plugin).
declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<Record<string, unknown>, object, unknown>;
  export default component;
}
