// A value read from a DuckDB row as a number or a text, NULL kept as null.
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
export const textOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
