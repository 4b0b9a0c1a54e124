/** See bin/shape-rules.mjs. */
export interface CruisedModule {
  source: string;
  dependencies: { resolved: string }[];
}
export interface FolderCycle {
  folders: string[];
  edges: { from: string; to: string; imports: string[] }[];
}
export interface LongFunction {
  name: string;
  line: number;
  lines: number;
}
export const maxFunctionLines: number;
export const testCodePattern: RegExp;
export function isProduction(path: string): boolean;
export function folderOf(path: string): string;
export function folderGraph(modules: CruisedModule[]): Map<string, Map<string, string[]>>;
export function stronglyConnected(graph: Map<string, Map<string, unknown>>): string[][];
export function folderCycles(modules: CruisedModule[]): FolderCycle[];
export function longFunctions(source: string, options?: { max?: number; tsx?: boolean }): LongFunction[];
export function formatCycle(cycle: FolderCycle): string;
export function formatLongFunction(file: string, found: LongFunction, max?: number): string;
