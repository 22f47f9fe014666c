// Component tests import .vue files, and the tests are checked by tsc (vue-tsc checks the renderer itself):
// here a component takes any props, so a test's mount options are checked by the test's own assertions.
declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent<Record<string, unknown>, object, unknown>;
  export default component;
}
