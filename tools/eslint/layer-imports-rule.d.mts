import type { Rule } from 'eslint';

export declare const layerImportsRule: Rule.RuleModule;
export declare function layerOf(relPath: string): string | null;
declare const plugin: {
  rules: { 'layer-imports': Rule.RuleModule; 'core-layers': Rule.RuleModule; 'core-folder-cycles': Rule.RuleModule };
};
export default plugin;
