// The SQL judge (sql/views/43_ratio_judge.sql) against the oracle (test/oracle/evaluate.ts) on random series: hits, gaps,
// months to date, missing sources, rules changing mid-series, step-downs, supersedes, groups, a MID's own rules.
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMonths, evaluateRows, type MonthLevel, type RatioRow } from './oracle/evaluate.ts';
import { evaluateProjections } from './oracle/projection.ts';
import { explainRows } from './oracle/explain.ts';
import { resolveRules, ThresholdsFileSchema, type RuleSet } from '../rules/thresholds.ts';
import { judgeSqlOf, ruleTables } from '../rules/rule-table.ts';
import { writeRuleTables } from '../store/ratio-rules.ts';
import { explainFrom } from '../store/ratio-refresh.ts';
import { insertRows } from '../store/insert-rows.ts';
import { tempStore } from './ratios-fixtures.ts';
import type { Store } from '../store/db.ts';

const JUDGE_SQL = fs.readFileSync(path.join(import.meta.dirname, '..', 'sql', 'views', '43_ratio_judge.sql'), 'utf8');

/** One MID's random case: its own rules for one network's programs, and its months. */
interface Case { mid: string; network: 'mastercard' | 'visa'; rules: unknown[]; rows: RatioRow[] }

const PROGRAMS = { mastercard: ['ecp', 'efm'], visa: ['vamp', 'vdmp'] } as const;
const FIELDS = ['numerator_count', 'numerator_amount', 'denominator_count', 'denominator_amount', 'month_transaction_count', 'month_transaction_amount'] as const;
/** true about once in n */
const rare = (n: number) => fc.integer({ min: 0, max: n - 1 }).map((x) => x === 0);
const MONTHS = Array.from({ length: 16 }, (_, i) => addMonths('2025-01', i));

const conditionsArb = (minLength: number, maxLength: number) =>
  fc.array(fc.record({ field: fc.constantFrom(...FIELDS), comparison: fc.constantFrom('>=', '>'), value: fc.constantFrom(0, 10, 50, 200, 1000) }), { minLength, maxLength });
const ruleArb = (network: Case['network'], i: number) => fc.record({
  program: fc.constantFrom(...PROGRAMS[network]),
  level: fc.constantFrom('a', 'b', 'c'),
  rank: fc.integer({ min: 1, max: 3 }),
  metric: fc.constantFrom('count', 'amount'),
  comparison: fc.constantFrom('>=', '>'),
  ratio_threshold: fc.constantFrom(0.01, 0.02, 0.03, 0.05),
  // (now and then more than three: the judge words a rule's first three without a lambda, more with one)
  conditions: fc.oneof({ arbitrary: conditionsArb(0, 2), weight: 9 }, { arbitrary: conditionsArb(4, 5), weight: 1 }),
  months_to_enter: fc.integer({ min: 1, max: 3 }),
  months_to_leave: fc.integer({ min: 1, max: 3 }),
  from: fc.option(fc.constantFrom(...MONTHS), { freq: 3 }),
  span: fc.integer({ min: 0, max: 12 }),
  hasEnd: fc.boolean(),
  early_warning: rare(5),
  step_down_at_once: fc.boolean(),
  supersedes: rare(3),
  unconfirmed: rare(4),
}).map((r) => ({
  id: `r${i}`, network, program: r.program, level: r.level, rank: r.rank, metric: r.metric, comparison: r.comparison,
  ratio_threshold: r.ratio_threshold, conditions: r.conditions, months_to_enter: r.months_to_enter, months_to_leave: r.months_to_leave,
  effective_from: r.from ? `${r.from}-01` : null, effective_to: r.from && r.hasEnd ? `${addMonths(r.from, r.span)}-28` : null,
  early_warning: r.early_warning, step_down_at_once: r.step_down_at_once,
  supersedes: r.supersedes && r.program === PROGRAMS[network][1] ? [PROGRAMS[network][0]] : [],
  certainty: r.unconfirmed ? 'unconfirmed' : 'exact', certainty_note: r.unconfirmed ? 'a condition not in the data' : undefined,
}));

/** Fees for some levels, one reading each, some only from a month on. */
const FEES = (['mastercard', 'visa'] as const).flatMap((network) => PROGRAMS[network].flatMap((program) => ['a', 'c'].map((level, i) => ({
  id: `${network}.${program}.${level}`, network, program, level, per_event: 12.5 + i, currency: 'USD',
  basis: i ? 'every_counted_event' : 'events_above_threshold', effective_from: i ? '2025-05-01' : null, source: 'test',
}))));

const monthArb = fc.record({
  present: rare(6).map((b) => !b),
  num: fc.integer({ min: 0, max: 400 }),
  den: fc.oneof(fc.constant(null), fc.constant(0), fc.integer({ min: 1000, max: 20000 })),
  amountToo: fc.boolean(),
  partial: rare(6),
  missing: rare(6),
  // the amount row's sources apart from the count's: a month judged on one metric ignores the other's
  amountMissing: rare(6),
  projected: fc.integer({ min: 0, max: 600 }),
  days: fc.integer({ min: 1, max: 29 }),
  floor: rare(8),
});

type MonthFigures = { num: number; den: number | null; partial: boolean; missing: boolean; days: number; floor: boolean };

function rowOf(mid: string, network: string, program: string, metric: 'count' | 'amount', month: string, m: MonthFigures, projection?: number): RatioRow {
  const num = projection ?? m.num;
  const den = m.den;
  const numAmount = num * 10;
  const denAmount = den === null ? null : den * 10;
  const [n, d] = metric === 'count' ? [num, den] : [numAmount, denAmount];
  const ratio = d ? n / d : null;
  return {
    mid, network, program, metric, month, numerator: n, denominator: d, denominator_month: month,
    numerator_count: num, numerator_amount: numAmount, denominator_count: den, denominator_amount: denAmount,
    month_transaction_count: den, month_transaction_amount: denAmount, ratio, ratio_pct: null, ratio_bps: null,
    no_ratio_reason: ratio === null ? (d === null ? 'no_previous_month' : 'zero_transactions') : null, is_projection: projection !== undefined,
    is_partial: projection !== undefined || m.partial, days_covered: m.partial ? m.days : 30, days_in_month: 30, tc40_observed_from: '2024-01-01',
    numerator_complete: true, missing_sources: m.missing && projection === undefined ? 'a source is missing' : null, numerator_floor: m.floor,
  } as RatioRow;
}

const caseArb = (i: number) => fc.constantFrom<Case['network']>('mastercard', 'visa').chain((network) => fc.record({
  rules: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }).chain((xs) => fc.tuple(...xs.map((_, k) => ruleArb(network, k)))),
  start: fc.integer({ min: 0, max: 6 }),
  months: fc.array(monthArb, { minLength: 1, maxLength: 10 }),
  programs: fc.subarray([...PROGRAMS[network]], { minLength: 1 }),
}).map((c) => {
  const mid = `m${String(i).padStart(5, '0')}`;
  const rows: RatioRow[] = [];
  for (const program of c.programs) {
    c.months.forEach((m, k) => {
      if (!m.present) return;
      const month = MONTHS[c.start + k];
      for (const metric of m.amountToo ? (['count', 'amount'] as const) : (['count'] as const)) {
        const f = metric === 'amount' ? { ...m, missing: m.amountMissing } : m;
        rows.push(rowOf(mid, network, program, metric, month, f));
        if (m.partial) rows.push(rowOf(mid, network, program, metric, month, f, m.projected));
      }
    });
  }
  return { mid, network, rules: c.rules, rows } as Case;
}));

/** A batch of cases, a few MIDs monitored as groups (their rows summed: their own rules are the group's). */
const batchArb = (n: number) => fc.tuple(...Array.from({ length: n }, (_, i) => caseArb(i)));

function ruleSetOf(cases: Case[]): RuleSet {
  const mids: Record<string, unknown> = {};
  const groups: Record<string, unknown> = {};
  for (const c of cases) mids[c.mid] = { rules: c.rules };
  // Every tenth visa MID with the next visa MID: a VAMP group judged on the sums, under the first one's rules.
  const visa = cases.filter((c) => c.network === 'visa');
  for (let i = 0; i + 1 < visa.length; i += 10) {
    const id = `g${visa[i].mid}`;
    groups[id] = { mids: [visa[i].mid, visa[i + 1].mid], programs: ['vamp'] };
    mids[id] = { rules: visa[i].rules };
  }
  return resolveRules(ThresholdsFileSchema.parse({ extends_defaults: false, mids, groups, fees: FEES, watch: { fraction: 0.8 } }));
}

interface Judged { level: string | null; watch: string | null; superseded_by: string | null; met: string[]; streaks: string }
const key = (x: { mid: string; network: string; program: string; month: string }, v: number) => `${x.mid}|${x.network}|${x.program}|${x.month}|${v}`;

function oracle(rows: RatioRow[], set: RuleSet): Map<string, Judged> {
  const out = new Map<string, Judged>();
  const put = (l: MonthLevel, v: number) => out.set(key(l, v), {
    level: l.level, watch: l.watch, superseded_by: l.superseded_by, met: [...l.met],
    streaks: l.streaks.map((s) => `${s.level}:${s.met ? 1 : 0}:${s.metRun}:${s.missRun}:${s.in ? 1 : 0}`).sort().join(' '),
  });
  for (const l of evaluateRows(rows, set)) put(l, 0);
  for (const l of evaluateProjections(rows, set)) put(l, 1);
  return out;
}

const ROW_COLS = ['mid', 'network', 'program', 'metric', 'month', 'is_projection', 'is_partial', 'missing_sources', 'ratio', 'numerator_count',
  'numerator_amount', 'denominator_count', 'denominator_amount', 'month_transaction_count', 'month_transaction_amount', 'no_ratio_reason',
  'days_covered', 'days_in_month', 'numerator_floor'] as const;
const EXPLAINED = ['level', 'state', 'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by',
  'certainty', 'certainty_note', 'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis'] as const;

async function judgeSql(store: Store, rows: RatioRow[], set: RuleSet): Promise<Map<string, Judged>> {
  const t = ruleTables(set);
  await store.transaction((s) => writeRuleTables(s, t));
  await store.run(`CREATE OR REPLACE TEMP TABLE judge_rows (mid VARCHAR, network VARCHAR, program VARCHAR, metric VARCHAR, month VARCHAR, is_projection BOOLEAN,
    is_partial BOOLEAN, missing_sources VARCHAR, ratio DOUBLE, numerator_count DOUBLE, numerator_amount DOUBLE, denominator_count DOUBLE,
    denominator_amount DOUBLE, month_transaction_count DOUBLE, month_transaction_amount DOUBLE, no_ratio_reason VARCHAR, days_covered INTEGER,
    days_in_month INTEGER, numerator_floor BOOLEAN)`);
  await insertRows(store, 'judge_rows', rows.map((r) => ROW_COLS.map((c) => r[c])), ROW_COLS);
  // The observed months in two passes, the later seeded by the earlier's runs (a refresh from SPLIT), then projections.
  await store.run('CREATE OR REPLACE TEMP TABLE judge_streaks AS SELECT * FROM ratio_streaks LIMIT 0');
  // The judge reads the rows a rule reads, as a refresh gives them (store/ratio-refresh.ts).
  await store.run("CREATE OR REPLACE TEMP TABLE judge_monitored AS SELECT * FROM ratio_monitored('judge_rows')");
  await store.run("CREATE OR REPLACE TEMP TABLE judge_ruled AS SELECT * FROM ratio_ruled('judge_monitored')");
  await store.run(`CREATE OR REPLACE TEMP TABLE judge_before AS SELECT * FROM judge_ruled WHERE month < '${SPLIT}'`);
  await store.run(`CREATE OR REPLACE TEMP TABLE judge_after AS SELECT * FROM judge_ruled WHERE month >= '${SPLIT}'`);
  // Rows of no group are judged as a refresh judges them, without the groups' sums (grouped := FALSE).
  const g = `grouped := ${Object.keys(set.groups ?? {}).length > 0}`;
  await store.run(`CREATE OR REPLACE TEMP TABLE judge_runs AS SELECT * FROM ratio_level_runs('judge_before', ${t.watchFraction}, seeds := 'judge_streaks', ${g})`);
  await store.run('INSERT INTO judge_streaks SELECT * FROM judge_runs');
  await store.run(`INSERT INTO judge_runs SELECT * FROM ratio_level_runs('judge_after', ${t.watchFraction}, seeds := 'judge_streaks', ${g})`);
  // Projections as a refresh judges them: each pass's on the observed runs before it and its own.
  await store.run(`INSERT INTO judge_runs SELECT * FROM ratio_level_runs('judge_before', ${t.watchFraction}, v := 1, seeds := 'judge_streaks', ${g})`);
  await store.run('DELETE FROM judge_streaks');
  await store.run('INSERT INTO judge_streaks SELECT * FROM judge_runs WHERE v = 0');
  await store.run(`INSERT INTO judge_runs SELECT * FROM ratio_level_runs('judge_after', ${t.watchFraction}, v := 1, seeds := 'judge_streaks', ${g})`);
  const levels = await store.all<{ mid: string; network: string; program: string; month: string; v: number; level: string | null; watch: string | null; superseded_by: string | null; met: string[] | null }>(
    "SELECT mid, network, program, month, v, level, watch, superseded_by, met FROM ratio_series_levels('judge_runs')");
  const runs = await store.all<{ mid: string; network: string; program: string; month: string; v: number; s: string }>(
    `SELECT mid, network, program, month, v, string_agg(level || ':' || (CASE WHEN hit THEN 1 ELSE 0 END) || ':' || met_run || ':' || miss_run || ':' || (CASE WHEN held THEN 1 ELSE 0 END), ' ' ORDER BY level || ':' || (CASE WHEN hit THEN 1 ELSE 0 END) || ':' || met_run || ':' || miss_run || ':' || (CASE WHEN held THEN 1 ELSE 0 END)) AS s
       FROM judge_runs GROUP BY ALL`);
  const streaks = new Map(runs.map((r) => [key(r, Number(r.v)), r.s]));
  const out = new Map<string, Judged>();
  for (const l of levels) {
    out.set(key(l, Number(l.v)), { level: l.level, watch: l.watch, superseded_by: l.superseded_by, met: l.met ?? [], streaks: streaks.get(key(l, Number(l.v))) ?? '' });
  }
  return out;
}

/** The first series-month where SQL and the oracle differ (the oracle's months only: SQL has none where no rule reads). */
async function firstDifference(store: Store, cases: Case[]): Promise<string | null> {
  const rows = cases.flatMap((c) => c.rows);
  const set = ruleSetOf(cases);
  const want = oracle(rows, set);
  judgedSeries += new Set([...want.keys()].map((k) => k.split('|').slice(0, 3).join('|'))).size;
  const got = await judgeSql(store, rows, set);
  // A series SQL leaves out of its runs must have no state: no level, watch or met month, and every run 0.
  const none = (w: Judged): Judged => ({ level: null, watch: null, superseded_by: null, met: [],
    streaks: w.streaks.split(' ').filter(Boolean).map((e) => `${e.split(':')[0]}:0:0:0:0`).join(' ') });
  for (const [k, w] of want) {
    const g = got.get(k) ?? none(w);
    const a = JSON.stringify(w);
    const b = JSON.stringify(g);
    if (a !== b) return `${k}: oracle ${JSON.stringify(w)} sql ${b}`;
  }
  // Every row explained as the oracle (test/oracle/explain.ts) explains it.
  const explained = await store.all<Record<string, unknown>>(`SELECT mid, network, program, metric, month, is_projection, ${EXPLAINED.join(', ')}
    FROM ${(await explainFrom(store, 'judge_runs', 'judge_monitored'))('judge_monitored')}`);
  const rowKey = (r: Record<string, unknown>) => `${r.mid}|${r.network}|${r.program}|${r.metric}|${r.month}|${r.is_projection}`;
  const sql = new Map(explained.map((r) => [rowKey(r), r]));
  if (sql.size !== rows.length) return `ratio_explain gave ${sql.size} rows of ${rows.length}`;
  for (const e of explainRows(rows, set)) {
    const r = sql.get(rowKey(e as never));
    const a = JSON.stringify(EXPLAINED.map((c) => e[c] ?? null));
    const b = JSON.stringify(EXPLAINED.map((c) => r?.[c] ?? null));
    if (a !== b) return `${rowKey(e as never)}: oracle ${a} sql ${b}`;
  }
  return null;
}

let store: Store;
let dir: string;
/** Series (a MID's or a group's, × network × program) the oracle has judged. */
let judgedSeries = 0;
beforeAll(async () => { ({ store, dir } = await tempStore()); });
afterAll(() => { store.close(); fs.rmSync(dir, { recursive: true, force: true }); });

const BATCH = 1000;
/** The month a second pass starts from, seeded by the first's runs. */
const SPLIT = '2025-07';
const property = () => fc.asyncProperty(batchArb(BATCH), async (cases) => {
  const diff = await firstDifference(store, cases);
  if (diff) throw new Error(diff);
});

describe('the SQL judge equals the oracle', () => {
  // JUDGE_RUNS=N checks N batches in place of 12.
  it('on at least 10,000 random series (12 batches of 1,000 MIDs)', async () => {
    judgedSeries = 0;
    await fc.assert(property(), { numRuns: Number(process.env.JUDGE_RUNS ?? 12), seed: 35, endOnFailure: true });
    if (!process.env.JUDGE_RUNS) expect(judgedSeries).toBeGreaterThanOrEqual(10_000);
  }, 600_000);

  // Each planted fault must make the same property fail: the property can tell.
  const faults: Array<[string, string, string]> = [
    ['a streak off by one', "cls = 'H' AND met_run >= enter", "cls = 'H' AND met_run > enter"],
    ['a month to date counted as a miss', "WHEN hit THEN 'H' WHEN partial OR unknown THEN 'N'", "WHEN hit THEN 'H' WHEN unknown THEN 'N'"],
    ['the step-down disabled', '(step_down AND coalesce(low_hit_rank < rank, FALSE))', '(FALSE)'],
    ['a refresh that drops the met run it starts from', "WHEN 'S' THEN seed_met", "WHEN 'S' THEN 0"],
    ["a refresh's projections blind to the levels held before them", 'k.v = 0 AND (k.met_run > 0', 'v = 0 AND (k.met_run > 0'],
  ];
  for (const [name, from, to] of faults) {
    it(`fails with ${name} planted`, async () => {
      expect(JUDGE_SQL).toContain(from);
      await store.run(JUDGE_SQL.replace(from, to));
      try {
        const r = await fc.check(property(), { numRuns: 10, seed: 35, endOnFailure: true });
        expect(r.failed).toBe(true);
      } finally {
        await store.run(JUDGE_SQL);
      }
    }, 600_000);
  }
});

describe("a refresh's projections", () => {
  it('judges each projected month once, on the observed runs before it, where a cooled level left an old seed', async () => {
    // A level entered in 2025-05 and left in 2025-06; two months to date after the split, each projected to a breach.
    const m = (num: number, partial = false) => ({ num, den: 1000, partial, missing: false, days: partial ? 15 : 30, floor: false });
    const rule = { id: 'r0', network: 'mastercard', program: 'ecp', level: 'a', rank: 1, metric: 'count', comparison: '>=', ratio_threshold: 0.02,
      conditions: [], months_to_enter: 1, months_to_leave: 1, effective_from: null, effective_to: null, early_warning: false, step_down_at_once: false,
      supersedes: [], certainty: 'exact' };
    const at = (month: string, f: MonthFigures, projected?: number) => rowOf('m1', 'mastercard', 'ecp', 'count', month, f, projected);
    const rows = [at('2025-05', m(50)), at('2025-06', m(0)), at('2025-08', m(0, true)), at('2025-08', m(0, true), 50), at('2025-10', m(0, true)), at('2025-10', m(0, true), 50)];
    expect(await firstDifference(store, [{ mid: 'm1', network: 'mastercard', rules: [rule], rows }])).toBeNull();
    // One row per month and level of each reading, and projected runs only in projected months (a tile's later refresh would add the others again).
    expect(await store.all('SELECT v, month, count(*)::INTEGER AS n FROM judge_runs GROUP BY ALL ORDER BY v, month')).toEqual([
      { v: 0, month: '2025-05', n: 1 }, { v: 0, month: '2025-06', n: 1 }, { v: 1, month: '2025-08', n: 1 }, { v: 1, month: '2025-10', n: 1 }]);
  });
});

describe("the judge's identity (a change of it judges every month again)", () => {
  it('is the SQL of the ratio views but their comment lines', () => {
    const views = [{ file: '10_stg_events.sql', sql: 'SELECT 1;' }, { file: '43_ratio_judge.sql', sql: '-- the runs\nSELECT 2; -- kept\n' },
      { file: '50_facts_marts.sql', sql: 'SELECT 3;' }];
    const id = judgeSqlOf(views);
    expect(judgeSqlOf(views.map((v) => ({ ...v, sql: v.sql.replace('-- the runs', '  -- the streaks') })))).toBe(id);
    expect(judgeSqlOf(views.map((v) => ({ ...v, sql: v.sql.replace('SELECT 2', 'SELECT 4') })))).not.toBe(id);
    expect(judgeSqlOf(views.map((v) => ({ ...v, sql: v.sql.replace('-- kept', '-- changed') })))).not.toBe(id);
    expect(judgeSqlOf(views.map((v) => ({ ...v, sql: v.sql.replace('SELECT 3', 'SELECT 5') })))).toBe(id);
  });
});
