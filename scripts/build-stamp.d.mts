export const STAMP: string;
export function buildIncludes(root: string): string[];
export function buildStamp(root: string, include?: string[]): string;
export function readStamp(out: string): string | null;
