// Whether the kept ratio table (ratio_mart, written by store/ratio-refresh.ts) reflects the data the store holds now.
import type { Store } from './db.ts';
import { CAPTURE_MONTH, readMarks, sourceMarksOf } from './source-marks.ts';
import { touchedMonths } from './ratio-inputs.ts';

export interface MartFreshness {
  current: boolean; // the mart holds every row of the data as the store holds it now
  behind: string | null; // why not, and what to run; null when current
  changedMonths: string[]; // months whose sources changed since the mart was written
}

/** The command that brings the mart up to date. */
export const MART_CATCH_UP = 'cbp alerts evaluate';

/** Whether the kept table reflects the data: written whole, and no source month added, changed or gone since. */
export async function martFreshness(store: Pick<Store, 'all'>): Promise<MartFreshness> {
  const behind = (why: string, changedMonths: string[] = []): MartFreshness => ({ current: false, behind: `${why}: run \`${MART_CATCH_UP}\``, changedMonths });
  let state: { complete: boolean } | undefined;
  try {
    [state] = await store.all<{ complete: boolean }>('SELECT complete FROM ratio_mart_state LIMIT 1');
  } catch {
    return behind('this store has no ratio table yet (an older cbp wrote it)');
  }
  if (!state) return behind('the ratio table has not been written yet');
  if (!state.complete) return behind('the last write of the ratio table did not finish');
  const touched = touchedMonths(await readMarks(store, 'ratio_source_marks'), (await sourceMarksOf(store)).marks);
  if (touched.includes(CAPTURE_MONTH)) return behind('events were first captured at another day since the ratios were judged', touched);
  if (touched.length) return behind(`data of ${monthList(touched)} changed since the ratios were judged`, touched);
  return { current: true, behind: null, changedMonths: [] };
}

const monthList = (months: string[]) => (months.length <= 3 ? months.join(', ') : `${months.slice(0, 3).join(', ')} and ${months.length - 3} more months`);
