// The DuckDB threads of the stores a process opens without a count of their own (CBP_STORE_THREADS), set once the
// configuration is read; a module of its own so that setting it loads no DuckDB (the CLI's start-up).
let threads: number | undefined;

/** Sets the count (undefined: DuckDB's own, the machine's cores). */
export function setStoreThreads(n: number | undefined): void {
  threads = n;
}

export function storeThreads(): number | undefined {
  return threads;
}
