// Where `cbp report`'s ratio section comes from: the kept ratio table (mart_ratios). SQL counts every row of the report's
// months and picks what the section shows (the at-risk rows, the trends' series, the heat map's MIDs), and only those
// rows reach the builder.
import type { Store } from '../store/db.ts';
import { watchOf, type RuleSet } from '../rules/thresholds.ts';
import { rulesFor } from '../rules/rule-set.ts';
import { keptTableCheck, type KeptCheck } from './kept-table.ts';
import {
  forEachPickedBatch, keptAtRisk, keptHeat, keptRowsOfMids, keptTotals, pickSeries, type EntryThreshold, type SeriesKey,
} from '../store/report-ratios.ts';
import { RatioSectionBuilder, SECTION_CAPS, thresholdsIn, type RatioSection, type RatioSectionOptions } from '../report/model.ts';
import { latestMonths } from '../report/months.ts';

export { keptTableCheck, type KeptCheck };

type ReadStore = Pick<Store, 'all' | 'run' | 'columns' | 'mapRows' | 'conn'>;

export interface SectionQuery extends RatioSectionOptions {
  /** rows passed on at once from the kept table (default 5,000) */
  batchRows?: number;
  /** the store was judged under these rules a moment ago (keptTableCheck) */
  judgedHere?: boolean;
}

/** The entry threshold of each rules class × network × program × metric × month (what the heat map divides by). */
export function entryThresholds(rules: RuleSet, months: readonly string[]): EntryThreshold[] {
  const classes: Array<[string, ReturnType<typeof rulesFor>]> = [['', rulesFor({ ...rules, mids: {} }, '\u0000')]];
  for (const mid of Object.keys(rules.mids)) classes.push([`mid:${mid}`, rulesFor(rules, mid)]);
  const out: EntryThreshold[] = [];
  for (const [cls, list] of classes) {
    const targets = new Map(list.map((r) => [`${r.network}|${r.program}|${r.metric}`, r]));
    for (const { network, program, metric } of targets.values()) {
      for (const month of months) {
        const entry = thresholdsIn(list, network, program, metric, month)[0];
        if (entry) out.push({ class: cls, network, program, metric, month, entry: entry.ratio });
      }
    }
  }
  return out;
}

/** compareAtRisk's order (report/model.ts) on series keys: most severe, closest, then mid, network, program. */
const byRisk = (a: SeriesKey, b: SeriesKey) =>
  b.r - a.r || b.c - a.c || a.mid.localeCompare(b.mid) || a.network.localeCompare(b.network) || a.program.localeCompare(b.program);

/** The section from the kept table: counted and picked in SQL, only the rows shown read (the caller checked that it holds). */
export async function keptSection(store: ReadStore, q: SectionQuery): Promise<RatioSection> {
  const builder = new RatioSectionBuilder(q);
  const first = builder.months[0];
  const { trendCap = SECTION_CAPS.trendCap, heatCap = SECTION_CAPS.heatCap, clearCap = SECTION_CAPS.clearCap } = q;
  const picked = q.picked ?? [];
  // MIDs asked for: every row of theirs is shown (each gets its trends), so they are read whole.
  if (picked.length) {
    builder.add(await keptRowsOfMids(store, { first, month: q.month, mids: picked }));
    return builder.finish();
  }
  const totals = await keptTotals(store, { first, month: q.month });
  const shown = q.scope === 'latest' ? latestMonths(q.month, totals.partial.some((p) => p.month === q.month)) : [q.month];
  // At risk: every series not clear (staged as picks), the closest clear ones up to the cap, the trends' series whole.
  const risk = await keptAtRisk(store, { shown, clearCap: Math.max(0, clearCap), trendCap: Math.max(0, trendCap) });
  await pickSeries(store, shown.flatMap((m) => risk.clear.filter((k) => k.month === m).sort(byRisk).slice(0, Math.max(0, clearCap))), shown[0]);
  await pickSeries(store, [...risk.trendTop].sort(byRisk).slice(0, Math.max(0, trendCap)), first);
  // The heat map's MIDs are read whole; the other picks only for the months they need.
  const heat = await keptHeat(store, { first, month: q.month, watchFraction: watchOf(q.rules).fraction, cap: Math.max(0, heatCap), entries: entryThresholds(q.rules, builder.months) });
  const whole = [...heat.top].sort((a, b) => b.last - a.last || b.peak - a.peak || a.mid.localeCompare(b.mid)).slice(0, Math.max(0, heatCap)).map((h) => h.mid);
  await forEachPickedBatch(store, { first, month: q.month, shownFrom: shown[0], whole, batchRows: q.batchRows ?? 5_000 }, (rows, parts) => builder.add(rows, parts));
  return builder.finish({ mids: totals.mids, partial: totals.partial, atRisk: risk.total, trends: risk.trends, heat: heat.total });
}

/** The ratio section, and whether the kept table it was read from is behind the data or the rules. */
export interface SectionRead {
  section: RatioSection;
  check: KeptCheck;
}

/** The ratio section of `cbp report`, from the kept table. */
export async function readRatioSection(store: ReadStore, q: SectionQuery): Promise<SectionRead> {
  return { section: await keptSection(store, q), check: await keptTableCheck(store, q.rules, q.judgedHere) };
}
