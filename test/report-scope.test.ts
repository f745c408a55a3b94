// The report says what it shows, on synthetic explained rows (the rules are the reference ones): the months of
// `cbp ratios` with no flags named in the header, the month to date marked in the heat map, a ratio over its
// threshold without the level's other conditions in a colour of its own, a level held below its threshold
// saying so, trends from their first figures, win rates of few cases marked, and rows of state `unknown`.
import { describe, expect, it } from 'vitest';
import type { ExplainedRatioRow } from '../contract/ratios.ts';
import { FEW_DECIDED, HEAT_COLOURS, heatMapChart, winRateChart } from '../report/charts.ts';
import { renderReport, type ReportData } from '../report/html.ts';
import { RatioSectionBuilder, type RatioSection, type RatioSectionOptions } from '../report/model.ts';
import { latestMonths, scopeText } from '../report/months.ts';
import { loadRules } from '../rules/thresholds.ts';
import { REPORT_STATUSES, type WinRateRow } from '../store/report.ts';

const rules = loadRules();

type Row = Partial<ExplainedRatioRow> & { mid: string; network: string; program: string; month: string };

/** An observed, explained row: clear and complete unless told otherwise. */
function row(p: Row): ExplainedRatioRow {
  return {
    metric: 'count', numerator: null, denominator: null, denominator_month: null, numerator_count: null, numerator_amount: null,
    denominator_count: null, denominator_amount: null, month_transaction_count: null, month_transaction_amount: null,
    ratio: null, ratio_pct: null, ratio_bps: null, no_ratio_reason: null, is_projection: false, is_partial: false,
    days_covered: null, days_in_month: null, tc40_observed_from: null, numerator_complete: true, missing_sources: null, numerator_floor: false,
    level: null, state: 'clear', next_level: null, next_threshold: null, closeness: null, reason: null, region: 'US',
    region_source: 'default', monitored_as: p.mid, superseded_by: null, certainty: 'exact', certainty_note: null,
    ...(p.month === '2026-04' ? { is_partial: true, days_covered: 17, days_in_month: 30 } : {}),
    ...p,
  } as unknown as ExplainedRatioRow;
}

const MONTHS = ['2025-10', '2025-11', '2025-12', '2026-01', '2026-02', '2026-03', '2026-04'];

function rows(): ExplainedRatioRow[] {
  const out: ExplainedRatioRow[] = [];
  for (const month of MONTHS) {
    const open = month === '2026-04';
    // mc1: Mastercard ECP at ECM (2 %, 150), then 0.99 % and 65 chargebacks in the month to date: held.
    out.push(row({ mid: 'mc1', network: 'mastercard', program: 'ecp', month, ratio: open ? 0.0099 : 0.02, numerator_count: open ? 65 : 150,
      level: 'ecm', state: 'level', next_level: 'hecm', next_threshold: 0.03, closeness: (open ? 0.0099 : 0.02) / 0.03,
      reason: open ? 'ratio 0.99 % < 3.00 %; count 65 < 300 minimum' : 'ratio 2.00 % < 3.00 %; count 150 < 300 minimum' }));
    // mc3: Mastercard EFM at twice its ratio for six months, its amount far under the 50,000 minimum: no level.
    out.push(row({ mid: 'mc3', network: 'mastercard', program: 'efm', month, ratio: 0.0099, numerator_count: 59, numerator_amount: 4_725,
      denominator_count: 6_000, next_level: 'efm', next_threshold: 0.005, closeness: 1.98, reason: 'amount 4,725 < 50,000 minimum' }));
    // disc1: Discover excessive (1.34 %), 0.61 % in the month to date: the level held, the reason empty.
    out.push(row({ mid: 'disc1', network: 'discover', program: 'discover_excessive', month, ratio: open ? 0.0061 : 0.0134,
      numerator_count: open ? 55 : 123, month_transaction_count: 9_000, level: 'excessive', state: 'level', closeness: open ? 0.61 : 1.34 }));
    // v1: Visa VAMP over its 2.2 % with 1,600 disputes: a level, conditions met.
    out.push(row({ mid: 'v1', network: 'visa', program: 'vamp', month, ratio: 0.025, numerator_count: 1_600, level: 'excessive', state: 'level', closeness: 0.025 / 0.022 }));
    // calm0..2: clear.
    for (let i = 0; i < 3; i++) out.push(row({ mid: `calm${i}`, network: 'visa', program: 'vamp', month, ratio: 0.002, numerator_count: 5, next_level: 'excessive', next_threshold: 0.022, closeness: 0.09 }));
  }
  // mc2: ECM kept by its leave streak in 2026-03, as the oracle (test/oracle/explain.ts) says it.
  out.push(row({ mid: 'mc2', network: 'mastercard', program: 'ecp', month: '2026-03', ratio: 0.012, numerator_count: 90, level: 'ecm', state: 'level',
    next_level: 'hecm', next_threshold: 0.03, closeness: 0.4, reason: 'ECM kept until 3 consecutive months below (1 so far); ratio 1.20 % < 3.00 %; count 90 < 300 minimum' }));
  // unk1: the month to date's fraud reports are not loaded: state unknown, the reason says what to load.
  out.push(row({ mid: 'unk1', network: 'visa', program: 'vamp', month: '2026-04', ratio: 0.005, numerator_count: 20, state: 'unknown',
    next_level: 'excessive', next_threshold: 0.015, closeness: 0.33, reason: 'TC40 fraud reports not loaded for 2026-04: cbp run backfill --kinds events --from 2026-04-01' }));
  return out.sort((a, b) => a.mid.localeCompare(b.mid) || a.month.localeCompare(b.month));
}

function section(opts: Partial<RatioSectionOptions> = {}, data = rows()): RatioSection {
  const b = new RatioSectionBuilder({ month: '2026-04', scope: 'latest', rules, ...opts });
  b.add(data);
  return b.finish();
}

const quality = { matchRates: [], quarantine: [], freshness: [] };
const disputes = (winRates: WinRateRow[] = []): ReportData['disputes'] => ({
  reasonCodes: winRates.length ? [{ network: 'visa', reason_code: '10.4', reason: null, cases: 40, amount: 100 }] : [],
  winRates, statuses: winRates.map((w) => ({ month: w.month, status: 'Won' as const, cases: w.won })), statusNames: REPORT_STATUSES, orderAge: [],
});
const page = (s: RatioSection, winRates: WinRateRow[] = []) => renderReport({
  meta: { generatedAt: '2026-04-18T00:00:00Z', snapshot: 's.duckdb', snapshotModifiedAt: null, mids: [], thresholds: 'defaults' },
  ratios: s, disputes: disputes(winRates), quality,
});

describe('the months shown: the rule of `cbp ratios` with no flags, named in the header', () => {
  it('shows the latest complete month and the month to date, and names them', () => {
    expect(latestMonths('2026-04', true)).toEqual(['2026-03', '2026-04']);
    expect(latestMonths('2026-04', false)).toEqual(['2026-04']);
    const s = section();
    expect(s.shown).toEqual([
      { month: '2026-03', kind: 'complete', days_covered: null, days_in_month: null },
      { month: '2026-04', kind: 'month_to_date', days_covered: 17, days_in_month: 30 },
    ]);
    expect([...new Set(s.atRisk.map((r) => r.month))]).toEqual(['2026-03', '2026-04']);
    const html = page(s);
    expect(html).toContain('Latest complete month 2026-03, and 2026-04 month to date (17 of 30 days)');
    expect(html).toContain('<h3 class="month-month_to_date">2026-04, month to date (17 of 30 days)');
    expect(html).toContain('<code>cbp ratios</code> with no flags');
    // One trend per MID × program, whichever month put it at risk.
    expect(s.trends.map((t) => `${t.mid} ${t.program}`).sort()).toEqual(['disc1 discover_excessive', 'mc1 ecp', 'mc2 ecp', 'v1 vamp']);
  });

  it('shows the latest month alone when it is complete, and --month its month alone', () => {
    const complete = section({ month: '2026-03' });
    expect(complete.shown.map((m) => `${m.month} ${m.kind}`)).toEqual(['2026-03 complete']);
    expect(complete.atRisk.every((r) => r.month === '2026-03')).toBe(true);
    expect(page(complete)).toContain('<p class="scope">Latest complete month 2026-03: the months <code>cbp ratios</code> shows with no flags');
    const asked = section({ scope: 'month' });
    expect(asked.shown.map((m) => m.month)).toEqual(['2026-04']);
    expect(scopeText(asked.shown, asked.scope)).toBe('Month 2026-04 (--month), month to date (17 of 30 days)');
  });
});

describe('the heat map', () => {
  it('marks the month to date: a hatched column headed "MTD 17/30 d", and a legend entry', () => {
    const s = section();
    expect(s.toDate.map((m) => m.month)).toEqual(['2026-04']);
    const c = heatMapChart(s.heat, s.months, 0, { toDate: s.toDate, watchFraction: s.watchFraction });
    expect(c.svg).toContain('MTD 17/30 d');
    expect(c.svg).toContain('MTD: month to date (hatched)');
    expect(c.svg).toMatch(/<pattern\b/);
    expect(c.caption).toContain('2026-04 is month to date (MTD 17/30 d)');
    expect(page(s)).toContain('data-month-to-date="2026-04"');
  });

  it('colours a ratio over its threshold whose count or amount condition is not met apart from a level met', () => {
    const s = section();
    const cell = (mid: string, month: string) => {
      const h = s.heat.find((x) => x.mid === mid)!;
      const i = s.months.indexOf(month);
      return { v: h.cells[i], kind: h.kinds[i] };
    };
    expect(cell('mc3', '2026-03').kind).toBe('ratio_only');
    expect(cell('mc3', '2026-03').v).toBeCloseTo(1.98, 12);
    expect(cell('v1', '2026-03').kind).toBe('over');
    expect(cell('calm0', '2026-03').kind).toBe('clear');
    const c = heatMapChart(s.heat, s.months, 0, { toDate: s.toDate });
    expect(c.svg).toContain(`fill="${HEAT_COLOURS.ratio_only}"`);
    expect(c.svg).toContain('ratio over, count/amount not met');
    expect(HEAT_COLOURS.ratio_only).not.toBe(HEAT_COLOURS.over);
    expect(HEAT_COLOURS.ratio_only).not.toBe(HEAT_COLOURS.far_over);
  });

  it('starts at the first month any MID has a cell in', () => {
    const s = section();
    const c = heatMapChart(s.heat, s.months, 0);
    expect(c.svg).toContain('2025-10');
    expect(c.svg).not.toContain('2025-09');
  });
});

describe('a level held below its threshold says so', () => {
  it('writes why when the reason is empty (Discover at 61 % in the month to date), from the rules\' months to leave', () => {
    const s = section();
    const disc = s.atRisk.find((r) => r.mid === 'disc1' && r.month === '2026-04')!;
    expect(disc.state).toBe('level');
    expect(disc.reason).toBeNull();
    expect(disc.held).toBe('excessive held: a month to date never leaves a level (left after 1 complete month in a row not meeting it)');
    const ecm = s.atRisk.find((r) => r.mid === 'mc1' && r.month === '2026-04')!;
    expect(ecm.held).toBe('ECM held: a month to date never leaves a level (left after 3 complete months in a row not meeting it)');
    // At or over the threshold, nothing is held.
    expect(s.atRisk.find((r) => r.mid === 'disc1' && r.month === '2026-03')!.held).toBeNull();
    expect(s.atRisk.find((r) => r.mid === 'mc1' && r.month === '2026-03')!.held).toBeNull();
    const html = page(s);
    const cellOf = (mid: string, month: string) => new RegExp(`data-mid="${mid}" data-program="[^"]+" data-month="${month}">[\\s\\S]*?<td>([^\\n]*)</td></tr>`).exec(html)![1];
    expect(cellOf('disc1', '2026-04')).toBe('<b class="held">excessive held: a month to date never leaves a level (left after 1 complete month in a row not meeting it)</b>');
  });

  it('puts the reason\'s "kept until" clause first, once', () => {
    const s = section();
    const mc2 = s.atRisk.find((r) => r.mid === 'mc2')!;
    expect(mc2.held).toBe('ECM kept until 3 consecutive months below (1 so far)');
    const html = page(s);
    expect(html).toContain('<b class="held">ECM kept until 3 consecutive months below (1 so far)</b>; ratio 1.20 % &lt; 3.00 %; count 90 &lt; 300 minimum');
    expect(html.split('<script')[0].match(/kept until 3 consecutive/g)).toHaveLength(1);
  });

  it('says until when in a complete month, and why in a month missing a source', () => {
    const held = (p: Partial<ExplainedRatioRow>) => section({ month: '2026-03' }, [row({ mid: 'm', network: 'mastercard', program: 'ecp', month: '2026-03',
      ratio: 0.012, numerator_count: 90, level: 'ecm', state: 'level', next_level: 'hecm', next_threshold: 0.03, closeness: 0.4, ...p })]).atRisk[0].held;
    expect(held({})).toBe('ECM held until 3 complete months in a row not meeting it');
    expect(held({ missing_sources: 'MID report of 2026-02 not loaded' })).toBe('ECM held: a month missing a source never leaves a level (left after 3 complete months in a row not meeting it)');
    expect(held({ ratio: 0.02, numerator_count: 150 })).toBeNull();
  });

  it('says the level is held in general words when no rule of the level is found', () => {
    const s = section({ month: '2026-03' }, [row({ mid: 'x1', network: 'discover', program: 'discover_excessive', month: '2026-03', ratio: 0.005, level: 'custom', state: 'level', closeness: 0.5 })]);
    expect(s.atRisk[0].held).toBe('level held: below threshold for fewer months than the program requires to leave');
  });
});

describe('trends and win rates', () => {
  it('a trend starts at the series\' first month with figures, not with the empty months before it', () => {
    const s = section();
    expect(s.months[0]).toBe('2025-04');
    const mc1 = s.trends.find((t) => t.mid === 'mc1')!;
    expect(mc1.months[0].month).toBe('2025-10');
    expect(mc1.months.map((m) => m.month)).toEqual(MONTHS);
  });

  it(`marks a win rate of fewer than ${FEW_DECIDED} decided cases: a hollow point, "n=3", and a legend entry`, () => {
    const rates: WinRateRow[] = [
      { network: 'visa', month: '2026-02', cases: 40, won: 20, lost: 10, win_rate: 20 / 30 },
      { network: 'visa', month: '2026-03', cases: 30, won: 1, lost: 2, win_rate: 1 / 3 },
    ];
    const c = winRateChart(rates, ['2026-02', '2026-03']);
    expect(c.svg).toContain('n=3');
    expect(c.svg).not.toContain('n=30');
    expect(c.svg).toContain(`fewer than ${FEW_DECIDED} decided`);
    expect(c.caption).toContain('few cases');
    expect(winRateChart(rates.slice(0, 1), ['2026-02']).svg).not.toContain(`fewer than ${FEW_DECIDED} decided`);
    // In the page, the disputes' charts start at the first month with chargebacks too.
    const html = page(section(), rates);
    const fig = /<figure class="chart" data-chart="win-rate"[\s\S]*?<\/figure>/.exec(html)![0];
    expect(fig).toContain('2026-02');
    expect(fig).not.toContain('2026-01');
  });
});

describe('rows of state unknown (a source not loaded)', () => {
  it('are listed at risk with their reason, never capped, after watch and before clear, grey and striped', () => {
    const s = section({ clearCap: 0 });
    const april = s.atRisk.filter((r) => r.month === '2026-04');
    expect(april.map((r) => `${r.mid} ${r.state}`)).toEqual(['v1 level', 'disc1 level', 'mc1 level', 'unk1 unknown']);
    const html = page(s);
    expect(html).toMatch(/<tr class="state-unknown" data-mid="unk1"[\s\S]*?<span class="badge">unknown<\/span>[\s\S]*?TC40 fraud reports not loaded for 2026-04: cbp run backfill --kinds events --from 2026-04-01<\/td><\/tr>/);
    expect(html).toContain('tr.state-unknown { background: repeating-linear-gradient(');
    expect(html).toContain('1 unknown shown');
  });

  it('show in the heat map in their own striped grey, unless a known figure of the month says more', () => {
    const s = section();
    const h = s.heat.find((x) => x.mid === 'unk1')!;
    expect(h.kinds[s.months.indexOf('2026-04')]).toBe('unknown');
    expect(h.cells[s.months.indexOf('2026-04')]).toBeCloseTo(0.005 / 0.015, 12);
    const c = heatMapChart([h], s.months, 0);
    expect(c.svg).toContain(`fill="${HEAT_COLOURS.unknown}"`);
    expect(c.svg).toContain('33?');
    expect(c.svg).toContain('unknown: a source not loaded (striped)');
    // Beside an over row of another program the same month, the over one is shown.
    const both = section({}, [row({ mid: 'unk1', network: 'visa', program: 'vamp', month: '2026-04', ratio: 0.005, state: 'unknown' }),
      row({ mid: 'unk1', network: 'american_express', program: 'amex_excessive', month: '2026-04', ratio: 0.009, state: 'watch' })]);
    expect(both.heat[0].kinds[both.months.indexOf('2026-04')]).toBe('watch');
  });
});
