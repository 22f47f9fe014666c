// Component tests import .vue files, and the tests are checked by tsc (vue-tsc checks the renderer itself).
declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<object, object, unknown>;
  export default component;
}
