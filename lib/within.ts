// A promise given a deadline: its own value, or what `late` gives once the wait is over (its timer always cleared,
// so a settled promise never holds the process open).

/** p's value, or late()'s when ms pass first (late may throw: the result then rejects). */
export async function within<T, L>(p: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (e) {
        reject(e);
      }
    }, ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
