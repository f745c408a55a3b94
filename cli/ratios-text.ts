// `cbp ratios` as text (cli/commands/ratios.ts builds the view): a table a month, MIDs at risk first, their headroom
// and fees in words under it, and the notes that say how to read it.
import { headroomWords } from '../rules/headroom.ts';
import { feeWords } from '../rules/fees.ts';
import { chancePct, chanceWords } from '../rules/forecast.ts';
import { noRegionNote } from '../rules/regions.ts';
import type { RatioOutRow, RatiosView } from './commands/ratios.ts';
/** The table fits a terminal this wide: the last column (why not the next level) is cut to fit. */
export const TABLE_WIDTH = 120;

const NETWORK_SHORT: Record<string, string> = { visa: 'visa', mastercard: 'mc', american_express: 'amex', discover: 'disc' };
const PROGRAM_SHORT: Record<string, string> = { discover_excessive: 'excessive', amex_excessive: 'excessive' };

function programLabel(r: RatioOutRow): string {
  return `${NETWORK_SHORT[r.network] ?? r.network} ${PROGRAM_SHORT[r.program] ?? r.program}${r.metric === 'amount' ? ' amt' : ''}`;
}

const whole = (v: number | null): string => (v === null || !Number.isFinite(v) ? '-' : Math.round(v).toLocaleString('en-US'));

/** A percentage with 2 decimals, trailing zeros dropped for thresholds ("3%", "1.5%", "0.65%"). */
function pctText(f: number, trim: boolean): string {
  const s = (f * 100).toFixed(2);
  return `${trim ? s.replace(/\.?0+$/, '') : s}%`;
}

function stateText(r: RatioOutRow): string {
  if (r.state === null) return '-';
  if (r.state === 'level' && r.level) return r.level.toUpperCase();
  return r.state === 'level' ? 'LEVEL' : r.state;
}

function figuresText(r: RatioOutRow): string {
  const f = `${whole(r.numerator)} / ${whole(r.denominator)}`;
  if (r.metric !== 'amount') return f;
  return `${r.currency ?? (r.currencies.length > 1 ? 'mixed' : '?')} ${f}`;
}

/** Short marks, explained under the table: MTD, PROJ, TC40- (numerator without TC40s), ≈ approximate, ? unconfirmed. */
function marks(r: RatioOutRow): string[] {
  const m: string[] = [];
  if (r.is_projection) m.push('PROJ');
  else if (r.is_partial) m.push('MTD');
  if (r.numerator_complete === false) m.push('TC40-');
  if (r.certainty === 'approximate') m.push('≈');
  if (r.certainty === 'unconfirmed') m.push('?');
  return m;
}

const MARK_LEGEND: Record<string, string> = {
  MTD: 'MTD month to date',
  PROJ: 'PROJ projected to month end from the run rate (never observed)',
  'TC40-': 'TC40- partial: the month lies before TC40 fraud reports were captured, the numerator counts disputes only',
  '≈': '≈ approximate: computed on all transactions (the data cannot tell card-not-present or e-commerce ones)',
  '?': '? unconfirmed: a condition is not in the data (e.g. the 3-D Secure share)',
};

/**
 * Why not the next level, for the table: the row's `reason` (it names a superseding level and an
 * unconfirmed condition too) without its ratio clause when other conditions stopped the row as well (the
 * ratio and the next threshold are columns of their own), amounts with the MID's currency; else why there is
 * no ratio; "minimum" left out (the comparison says it). --json keeps the reason whole.
 */
function whyText(r: RatioOutRow): string {
  if (r.reason === null) return r.ratio === null && r.no_ratio_reason ? `no ratio: ${r.no_ratio_reason.replace(/_/g, ' ')}` : '';
  let parts = r.reason.split('; ');
  const others = parts.filter((p) => !/^ratio \S+ % (<|not above) /.test(p));
  if (others.length && others.length < parts.length) parts = others;
  parts = parts.map((p) => {
    let t = p.replace(/ minimum$/, '').replace(/ not above /, ' ≤ ').replace(/^no ratio \((\w+)\)$/, (_m, w: string) => `no ratio: ${w.replace(/_/g, ' ')}`);
    // Amounts whole, with the MID's currency.
    t = t.replace(/^((?:transaction )?amount(?: in the month)?) ([\d,]+(?:\.\d+)?)/, (_m, what: string, v: string) =>
      `${what} ${whole(Number(v.replace(/,/g, '')))}${r.currency ? ` ${r.currency}` : ''}`);
    return t;
  });
  return parts.join('; ');
}

/** An open month's chance of a breach: "94%", "<1%", ">99%", with its level when it is not the next one. */
export function chanceText(r: Pick<RatioOutRow, 'chance' | 'chance_level' | 'next_level'>): string {
  if (r.chance === null) return '-';
  const p = `${chancePct(r.chance)}%`;
  return r.chance_level && r.chance_level !== r.next_level ? `${p} ${r.chance_level}` : p;
}

const HEAD = ['state', 'mid', 'program', 'ratio', 'next at', 'close', 'chance', 'figures', 'region', 'marks', 'why not the next level'];
const RIGHT = new Set([3, 5]);

const regionText = (r: RatioOutRow) => (r.region === null ? '-' : `${r.region}${r.region_source === 'default' ? '*' : ''}`);

/** The table; the region column only when the rows shown were evaluated under more than one (else a note says which). */
function tableLines(rows: RatioOutRow[], width: number, showRegion: boolean): string[] {
  const body = rows.map((r) => [
    stateText(r),
    r.mid,
    programLabel(r),
    r.ratio === null ? '-' : pctText(r.ratio, false),
    r.next_level === null || r.next_threshold === null ? (r.state === null ? '-' : 'top') : `${r.next_level} ${pctText(r.next_threshold, true)}`,
    r.closeness === null ? '-' : r.closeness.toFixed(2),
    chanceText(r),
    figuresText(r),
    regionText(r),
    marks(r).join(' '),
    whyText(r),
  ]);
  const cols = HEAD.map((_, i) => i).filter((i) => showRegion || HEAD[i] !== 'region');
  const widths = HEAD.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const last = HEAD.length - 1;
  const fixed = cols.filter((i) => i !== last).reduce((n, i) => n + widths[i] + 2, 0);
  widths[last] = Math.max(HEAD[last].length, Math.min(widths[last], width - fixed));
  const cell = (x: string, i: number) => {
    const w = widths[i];
    const t = x.length > w ? `${x.slice(0, w - 1)}…` : x;
    return RIGHT.has(i) ? t.padStart(w) : t.padEnd(w);
  };
  const line = (c: string[]) => cols.map((i) => cell(c[i], i)).join('  ').trimEnd();
  return [line(HEAD), ...body.map(line)];
}

function monthTitle(m: RatiosView['months'][number], rows: RatioOutRow[]): string {
  const observed = rows.filter((r) => !r.is_projection);
  const levels = observed.filter((r) => r.state === 'level').length;
  const watch = observed.filter((r) => r.state === 'watch').length;
  const what =
    m.kind === 'complete'
      ? 'complete month'
      : `MONTH TO DATE${m.days_covered !== null && m.days_in_month !== null ? ` (${m.days_covered} of ${m.days_in_month} days)` : ''}: figures so far; PROJ rows projected to month end`;
  const n = m.rows ?? rows.length;
  return `${m.month}, ${what}: ${n} row${n === 1 ? '' : 's'}, ${m.levels ?? levels} at a level, ${m.watch ?? watch} watch`;
}

/** Words of one line wrapped at width, continuation lines indented like the first (plus two). */
function wrap(text: string, width: number): string[] {
  const indent = /^\s*/.exec(text)![0] + '  ';
  const lines: string[] = [];
  let cur = '';
  for (const word of text.trim().split(' ')) {
    const lead = lines.length === 0 ? /^\s*/.exec(text)![0] : indent;
    if (cur && (lead + cur + ' ' + word).length > width) {
      lines.push(lead + cur);
      cur = word;
    } else cur = cur ? `${cur} ${word}` : word;
  }
  if (cur) lines.push((lines.length === 0 ? /^\s*/.exec(text)![0] : indent) + cur);
  return lines;
}

/** Under a month's table: each MID at a level or in watch, its headroom and fee in words (rules/headroom.ts, rules/fees.ts). */
function headroomLines(rows: RatioOutRow[], width: number): string[] {
  const out: string[] = [];
  for (const r of rows) {
    if (r.state !== 'level' && r.state !== 'watch') continue;
    const words = [headroomWords(r), feeWords(r)].filter(Boolean).join('; ');
    if (words) out.push(...wrap(`  ${r.mid} ${programLabel(r)}${r.is_projection ? ' PROJ' : ''}: ${words}`, width));
  }
  return out.length ? ['headroom (estimates):', ...out] : [];
}

/** Under a month to date's table: each series with a chance of 5 % or more, its expected count and when its pace gets there. */
function chanceLines(rows: RatioOutRow[], width: number): string[] {
  const out: string[] = [];
  for (const r of rows) {
    if (r.chance === null || r.chance < 0.05) continue;
    out.push(...wrap(`  ${r.mid} ${programLabel(r)}: ${chanceWords(r)}`, width));
  }
  return out.length ? ['chance of a breach (forecast):', ...out] : [];
}

/** What the rules name and do not judge (rules/defaults.json not_modelled): each reason without its asides, to its first "; ". */
export function notModelledNote(list: Array<{ reason: string }>): string | null {
  const short = list.map((n) => n.reason.replace(/\s*\([^()]*\)/g, '').split('; ')[0].trim());
  return short.length ? `Not modelled (docs/ratios.md "Not modelled"): ${short.join('; ')}.` : null;
}

export function renderRatios(v: RatiosView, width = TABLE_WIDTH, notModelled: Array<{ reason: string }> = []): string {
  const out: string[] = [];
  if (v.rows.length === 0) {
    out.push(v.months.length === 0 && v.scope === 'latest' ? 'No ratio rows yet: load a MID report first (cbp run nightly, or cbp load).' : 'No ratio rows match.');
  }
  const regions = new Set(v.rows.map(regionText));
  for (const m of v.months) {
    const rows = v.rows.filter((r) => r.month === m.month);
    if (rows.length === 0) continue;
    if (out.length) out.push('');
    out.push(monthTitle(m, rows), ...tableLines(rows, width, regions.size > 1));
    out.push(...headroomLines(rows, width), ...chanceLines(rows, width));
    const more = (m.rows ?? rows.length) - rows.length;
    if (more > 0) out.push(`… ${more} more row${more === 1 ? '' : 's'} of ${m.month}, less at risk: --limit N shows more, --limit 0 every row, --json every column`);
  }
  const notes: string[] = [];
  if (v.behind) notes.push(`The ratio table is behind: ${v.behind}. The rows below are as it holds them.`);
  if (v.rows.length) {
    notes.push(
      `Sorted at risk first by close(ness) = ratio ÷ the next level's threshold (1.00 = at it; at the top level, its own). ${v.allPrograms ? 'Every program.' : 'Programs in force only (--all-programs for retired ones and monthly).'}` +
        `${v.scope === 'latest' ? ' Other months: --month YYYY-MM or --all.' : ''} Every column, unrounded: --json.`,
    );
    if (v.rows.some((r) => r.chance !== null)) {
      notes.push('  chance: that the month to date ends at its next level (or the one named), from its days so far and its history (docs/ratios.md "The chance of a breach").');
    }
    const used = new Set(v.rows.flatMap(marks));
    for (const k of Object.keys(MARK_LEGEND)) if (used.has(k)) notes.push(`  ${MARK_LEGEND[k]}`);
    if (v.rows.some((r) => r.metric === 'amount' || /amount/.test(r.reason ?? ''))) {
      const n = v.midsWithoutCurrency.length;
      notes.push(
        `  Amounts are in each MID's currency, as its chargebacks name it (the MID report names none)${n ? `; ${n} MID${n === 1 ? '' : 's'} without one known currency (? unknown, or mixed)` : ''}.`,
      );
    }
  }
  if (regions.size === 1) {
    const [only] = v.rows;
    notes.push(`Region: every MID shown was evaluated as ${only.region ?? 'no region'}${only.region_source === 'default' ? '*' : ''}.`);
  }
  if (v.midsWithoutRegion.length) notes.push(`* ${noRegionNote(v.midsWithoutRegion.length, v.defaultRegion, v.defaultRegionFrom)}.`);
  const nm = v.rows.length ? notModelledNote(notModelled) : null;
  if (nm) notes.push(nm);
  if (notes.length) out.push('', ...notes.flatMap((t) => wrap(t, width)));
  return out.join('\n');
}
