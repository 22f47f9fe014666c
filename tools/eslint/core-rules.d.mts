import type { Rule } from 'eslint';

export declare const coreLayersRule: Rule.RuleModule;
export declare const coreFolderCyclesRule: Rule.RuleModule;
export declare function topFolderOf(relFile: string): string;
export declare function coreLayerOf(relFile: string): { folder: string; layer: string | null; index: number };
export declare function scanSpecifiers(text: string): string[];
export declare function coreGraph(root: string): { files: Map<string, Set<string>> };
export declare function clearCoreGraphCache(): void;
