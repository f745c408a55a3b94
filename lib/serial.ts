// One at a time, in call order: the one serialising queue, behind a DuckDB connection's lane (store/db.ts
// Store.exclusive, which transactions and report loads go through) and the activities' store lock
// (activities/deps.ts). A call starts once the call before it has settled, whether that one succeeded or
// failed; a failure reaches only its own caller.

export type SerialQueue = <T>(fn: () => Promise<T>) => Promise<T>;

export function serialQueue(): SerialQueue {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
