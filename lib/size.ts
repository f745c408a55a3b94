// Sizes as DuckDB writes them (its memory_limit setting): a number and a unit, B, KB, MB, GB, TB in powers of 1000,
// KiB, MiB, GiB, TiB in powers of 1024, any letter case, a space allowed between ("192MB", "183.1 MiB").

const UNITS: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
};

export const SIZE_RE = /^(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i;

/** Bytes as people read them in messages: mebibytes to one decimal. */
export const mibText = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** The bytes a size stands for; NaN for any other text. */
export function sizeBytes(text: string): number {
  const m = SIZE_RE.exec(text.trim());
  return m ? Number(m[1]) * UNITS[m[2].toLowerCase()] : NaN;
}

/**
 * The store's DuckDB memory limit unless set (CBP_STORE_MEMORY_LIMIT). DuckDB keeps it only roughly, and the process
 * holds more than it; a lower limit keeps the process smaller at the same speed (bench/load.bench.ts measures it).
 */
export const DEFAULT_STORE_MEMORY = '192MB';

/** The least memory limit the store takes: its ratio inputs refresh needs it for its smallest statements. */
export const MIN_STORE_MEMORY = 128e6;

/** DuckDB's memory limit (bytes) for reads that scan each block once (Store.capMemory): a larger cache only raises the peak. */
export const SCAN_MEMORY = 64e6;
