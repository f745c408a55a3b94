// Loading a landing file into the store with DuckDB's own readers: one SQL pass reads, types and validates
// every row into a de-duplicated staging table; a few set-based statements then move it into the quarantine,
// the current-state tables and the status histories — all in ONE transaction, so a failed or killed load
// leaves the store as it was. No row ever passes through JavaScript. A chargeback report loaded into an
// empty store skips staging and goes straight into its table (firstLoadChargebacks), same result.
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHARGEBACK_COLUMNS, CHARGEBACK_STATUSES, MID_KEY_NETWORK, MID_NETWORK_KEYS, PREVENTION_COLUMNS, PREVENTION_STATUSES, SOURCE_PARTNERS, STAT_FIELDS, type ReportKind } from '../contract/reporting.ts';
import { CARD_BRANDS, toIsoUtc } from '../contract/common.ts';
import { NotFoundError, UsageError, type CbpError } from '../lib/errors.ts';
import type { Store } from './db.ts';
import { BadReportFileError, StoreUnavailableError } from './errors.ts';
import { metaPath, readMeta, sha256Stream, type LandingMeta } from './landing.ts';
import {
  HEAD_CHARS, ROW_LIMIT, SAFE_CSV_RECORD, copyWithout, lineAt, parseCsvRecord, parseJsonRecord, scanCsv, scanJsonArray, type LongRow, type Span,
} from './long-rows.ts';

export type FileFormat = 'json' | 'csv';

/** A report window: inclusive UTC days `YYYY-MM-DD` (a date-time is cut to its UTC date). */
export interface Window {
  start: string;
  end: string;
}

export interface LoadOptions {
  kind: ReportKind;
  /** Inferred from the extension when absent. */
  format?: FileFormat;
  /** Required for mid_report (its records carry no dates); else taken from the sidecar when there is one. */
  window?: Window;
  /** When the rows were observed; default: the sidecar's fetched_at, else the window's last second, else the file's mtime. */
  seenAt?: string;
  /** Test hook: runs inside the transaction just before COMMIT. */
  beforeCommit?: () => Promise<void> | void;
}

export interface LoadResult {
  file: string;
  kind: ReportKind;
  format: FileFormat;
  window: Window | null;
  seenAt: string;
  sha256: string;
  rowsRead: number;
  rowsLoaded: number;
  quarantined: number;
  /** The same file (sha256, kind, window) had been loaded before; the store is unchanged by design. */
  reloaded: boolean;
}

// ---------------------------------------------------------------------------------------------------------
// SQL building blocks. Every raw column is VARCHAR; these type it and say why when they cannot.

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
// trim() copies every value; an ASCII value with no space at either end is already trimmed (trim also strips
// Unicode spaces, which only a non-ASCII value can hold), so only the rest pay for it.
const nz = (c: string) =>
  `CASE WHEN NOT starts_with(${c}, ' ') AND NOT ends_with(${c}, ' ') AND strlen(${c}) = length(${c}) THEN NULLIF(${c}, '') ELSE NULLIF(trim(${c}), '') END`;
/** Descriptive text kept as received; only an empty string means "not given" (trimming every cell doubled the cost). */
const txt = (c: string) => `NULLIF(${c}, '')`;
const shown = (c: string) => `coalesce(to_json(${c})::VARCHAR, 'nothing')`;

const COUNT_RE = `'[0-9]+(\\.0+)?'`;
const FLOAT_RE = `'-?[0-9]*\\.?[0-9]+([eE][-+]?[0-9]+)?'`;

// DuckDB's DECIMAL cast accepts exactly the decimal spellings (no thousands separators, no words); a JSON
// number in exponent form goes through DOUBLE. The second cast runs only where the first gave NULL.
const amountT = (c: string) =>
  `CASE WHEN NOT contains(${c}, '_') THEN coalesce(TRY_CAST(${c} AS DECIMAL(18,4)), TRY_CAST(TRY_CAST(${c} AS DOUBLE) AS DECIMAL(18,4))) END`;
const countT = (c: string) => `CASE WHEN regexp_full_match(${nz(c)}, ${COUNT_RE}) THEN TRY_CAST(TRY_CAST(trim(${c}) AS DECIMAL(38,1)) AS BIGINT) END`;
const floatT = (c: string) => `CASE WHEN regexp_full_match(${nz(c)}, ${FLOAT_RE}) THEN TRY_CAST(trim(${c}) AS DOUBLE) END`;
// Both spellings of the spec, a fraction, Z/UTC/an offset, or a bare date (midnight). The usual shapes —
// YYYY-MM-DD HH:MM:SS (either separator, an optional Z) and YYYY-MM-DD — take DuckDB's plain TIMESTAMP cast,
// ten times cheaper than the zone-aware one: no offset fits in them, and LIKE with fixed-width patterns
// recognises them without copying the value. Anything else (an offset, a fraction, lower-case t/z, padding,
// or what the plain cast refuses) goes through TIMESTAMPTZ (the session zone is UTC, set by openStore, so the
// result is UTC wall time). The digit gate keeps DuckDB's special words ('epoch', 'infinity') and signed
// years out: the contract accepts none of them.
const tsSlow = (c: string) =>
  `CASE WHEN ascii(trim(${c})) BETWEEN 48 AND 57 THEN TRY_CAST(TRY_CAST(upper(trim(${c})) AS TIMESTAMPTZ) AS TIMESTAMP) END`;
const tsT = (c: string) =>
  `CASE WHEN ascii(${c}) BETWEEN 48 AND 57 AND (${c} LIKE '____-__-_____:__:__' OR ${c} LIKE '____-__-__' OR ${c} LIKE '____-__-_____:__:__Z')
   THEN coalesce(TRY_CAST(${c} AS TIMESTAMP), ${tsSlow(c)}) ELSE ${tsSlow(c)} END`;
// A value already spelled as its canonical form maps to itself: that test is a cheap list lookup, and only
// other spellings pay for the normalising string functions. list_contains, not IN: DuckDB turns an IN list
// into a join against the constants, which cost a 1M-row load ~0.1 s of CPU more for the three columns.
const oneOf = (c: string, values: readonly string[]) => `list_contains([${values.map(q).join(', ')}], ${c})`;
const enumT = (c: string, values: readonly string[], key: string) =>
  `CASE WHEN ${oneOf(c, values)} THEN ${c} ELSE CASE ${key} ${values.map((v) => `WHEN ${q(v.toLowerCase())} THEN ${q(v)}`).join(' ')} END END`;
// Plain replace, not a regex: it runs on every row, and the spellings seen are did_not_fight and Did Not Fight.
const statusT = (c: string) => enumT(c, CHARGEBACK_STATUSES, `lower(replace(trim(${c}), '_', ' '))`);
// contract/common.ts BRAND_ALIASES, as SQL.
const BRAND_ALIASES: Record<string, string> = {
  visa: 'visa', mastercard: 'mastercard', master_card: 'mastercard', mc: 'mastercard', american_express: 'american_express',
  americanexpress: 'american_express', amex: 'american_express', discover: 'discover', diners: 'diners', diners_club: 'diners',
  elo: 'elo', paypal: 'paypal', jcb: 'jcb',
};
const brandT = (c: string) =>
  `CASE WHEN ${oneOf(c, [...new Set(Object.values(BRAND_ALIASES))])} THEN ${c} ELSE CASE lower(replace(replace(trim(${c}), ' ', '_'), '-', '_')) ${Object.entries(BRAND_ALIASES)
    .map(([k, v]) => `WHEN ${q(k)} THEN ${q(v)}`)
    .join(' ')} END END`;
// The usual codes are a list lookup; only others pay for the pattern match.
const COMMON_CURRENCIES = ['USD', 'EUR', 'GBP', 'CAD', 'AUD'];
const currencyT = (c: string) =>
  `CASE WHEN ${oneOf(c, COMMON_CURRENCIES)} THEN ${c} WHEN regexp_full_match(${c}, '[A-Z]{3}') THEN ${c} WHEN length(trim(${c})) = 3 AND regexp_full_match(trim(${c}), '[A-Za-z]{3}') THEN upper(trim(${c})) END`;

/**
 * A check: when `bad` holds, the row is quarantined with `field: expectation, got value`. `gate` is a cheap
 * condition that holds whenever `bad` does: a row none of whose gates hold skips building a reason at all.
 */
interface Check {
  gate: string;
  reason: string;
}
const check = (bad: string, field: string, expect: string, raw: string, gate = bad): Check => ({
  gate,
  reason: `CASE WHEN ${bad} THEN ${q(`${field}: ${expect}, got `)} || ${shown(raw)} END`,
});
const required = (field: string, raw: string) => check(`t_${field} IS NULL`, field, 'a non-empty value', raw);
/** Optional field: quarantined only when given and not parseable. */
const optBad = (raw: string, typed: string) => `(${typed} IS NULL AND ${nz(raw)} IS NOT NULL)`;
const optional = (raw: string, typed: string, field: string, expect: string) => check(optBad(raw, typed), field, expect, raw, `${typed} IS NULL`);

const DT_EXPECT = 'a UTC date-time YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD HH:MM:SS, or a date YYYY-MM-DD';
const AMOUNT_EXPECT = 'an amount (a number or a decimal string such as "94.76")';

// ---------------------------------------------------------------------------------------------------------
// Raw columns per kind, and how a JSON record or CSV header supplies them.

const MID_OBJECT_ALIASES: Record<(typeof MID_NETWORK_KEYS)[number], string[]> = {
  visa: ['visa'],
  master_card: ['master_card', 'mastercard'],
  discover: ['discover'],
  amex: ['amex', 'american_express', 'americanexpress'],
};
const MC_EXTRA = ['previous_month_transaction_amount', 'previous_month_transaction_count'];
const netFields = (k: string) => [...STAT_FIELDS, ...(k === 'master_card' ? MC_EXTRA : [])];
const MID_FLAT_COLUMNS = MID_NETWORK_KEYS.flatMap((k) => netFields(k).map((f) => `${k}_${f}`));
const MID_RAW_COLUMNS = ['mid', 'alias', 'gateways', ...STAT_FIELDS, ...MID_FLAT_COLUMNS];
const MID_OBJECT_COLUMNS = Object.values(MID_OBJECT_ALIASES).flat();

const RAW_COLUMNS: Record<ReportKind, string[]> = {
  chargebacks: [...CHARGEBACK_COLUMNS],
  prevention: [...PREVENTION_COLUMNS],
  mid_report: [...MID_RAW_COLUMNS, ...MID_OBJECT_COLUMNS],
};
/** Columns only this kind has: a file with none of them is another kind's report. */
const DISTINCTIVE: Record<ReportKind, string[]> = {
  chargebacks: ['case_number', 'status', 'card_number', 'card_type', 'reason_code', 'reason', 'tracking_number'],
  prevention: ['alert_case_id', 'statuses', 'source_partner', 'merchant_descriptor', 'bin', 'last_four'],
  mid_report: ['alias', 'gateways', ...STAT_FIELDS, ...MID_OBJECT_COLUMNS, ...MID_FLAT_COLUMNS],
};
/** A CSV header must name the kind's identity column. */
const CSV_IDENTITY: Record<ReportKind, string> = { chargebacks: 'case_number', prevention: 'alert_case_id', mid_report: 'mid' };

function inferFormat(file: string): FileFormat | undefined {
  const ext = path.extname(file).toLowerCase();
  return ext === '.json' ? 'json' : ext === '.csv' ? 'csv' : undefined;
}

/** An empty 200 from the service (no bytes, or whitespace only) means "no data": nothing to load. */
function isBlank(file: string): boolean {
  const size = statSync(file).size;
  if (size > 4096) return false;
  return readFileSync(file, 'utf8').replace(/^\uFEFF/, '').trim() === '';
}

/**
 * A file in UTF-16 (as some spreadsheet tools save "Unicode text") would read as a header or a first record
 * of garbage: refused up front, saying what to do.
 */
function checkNotUtf16(file: string, shown: string): void {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(4);
    const n = readSync(fd, b, 0, 4, 0);
    const bom = n >= 2 && ((b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff));
    // Without a byte order mark: ASCII text in UTF-16 has a zero byte beside each of its first characters.
    const zeros = n === 4 && ((b[0] === 0 && b[2] === 0 && b[1] !== 0) || (b[1] === 0 && b[3] === 0 && b[0] !== 0));
    if (bom || zeros) {
      throw new BadReportFileError(`${shown} is UTF-16 text, and cbp reads UTF-8: save or export it as UTF-8 (in a spreadsheet: "CSV UTF-8") and load it again.`);
    }
  } finally {
    closeSync(fd);
  }
}

/** The first non-blank bytes: a JSON report must open an array of objects (DuckDB would read `[1,2]` too). */
function checkJsonShape(file: string, shown: string): void {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(65536);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const head = buf.subarray(0, n).toString('utf8').replace(/^\uFEFF/, '').trimStart();
    if (!head.startsWith('[')) {
      throw new BadReportFileError(`${shown} is not a JSON report: expected an array of records ([{...}, ...]), got ${JSON.stringify(head.slice(0, 20))}…`);
    }
    const next = head.slice(1).trimStart()[0];
    if (next !== undefined && next !== '{' && next !== ']') {
      throw new BadReportFileError(`${shown} is not a JSON report: expected an array of objects, but its first element starts with ${JSON.stringify(next)}`);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The CSV header's field names, parsed here (RFC 4180: quoted names, "" inside quotes, CRLF or LF), or
 * undefined when the first record does not end within the first MiB. Knowing the header, the load names its
 * columns itself and DuckDB reads the file without sniffing a sample of it first (twice: once to learn the
 * header, once more for the load).
 */
export function csvHeader(file: string): string[] | undefined {
  const fd = openSync(file, 'r');
  let text: string;
  let whole: boolean;
  try {
    const buf = Buffer.alloc(1 << 20);
    const n = readSync(fd, buf, 0, buf.length, 0);
    whole = n < buf.length;
    text = buf.subarray(0, n).toString('utf8').replace(/^\uFEFF/, '');
  } finally {
    closeSync(fd);
  }
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        const close = text.indexOf('"', i);
        if (close < 0) return undefined;
        field += text.slice(i, close);
        i = close + 1;
        if (text[i] !== '"') break;
        field += '"';
        i++;
      }
      // Text after a closing quote (a"b"c) is not RFC 4180: let DuckDB's sniffer judge the file.
      if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') return undefined;
    } else {
      const sep = /[,\r\n]/g;
      sep.lastIndex = i;
      const m = sep.exec(text);
      const end = m ? m.index : text.length;
      field = text.slice(i, end);
      if (field.includes('"')) return undefined;
      i = end;
    }
    fields.push(field);
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (i >= text.length && !whole) return undefined;
    return fields;
  }
}

/**
 * Adds the rows of `source` (a SELECT giving raw and reason) to the quarantine, each once: a reload, or an
 * overlapping report holding the same bad row, adds nothing it already holds.
 */
function quarantine(s: Store, kind: ReportKind, source: string, file: string, sha256: string): Promise<void> {
  return s.run(
    `INSERT INTO quarantine SELECT DISTINCT $1, r.raw, r.reason, $2, $3, current_timestamp::TIMESTAMP FROM (${source}) r
     WHERE NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.kind = $1 AND q.raw = r.raw AND q.reason = r.reason)`,
    [kind, file, sha256],
  );
}

const unclosedQuote = (shown: string, line: string | number, text: string) =>
  new BadReportFileError(
    `${shown} has a quoted value that is never closed, on CSV line ${line} (${JSON.stringify(text.slice(0, 60))}…): the rows after it cannot be told apart, so nothing was loaded. Close the quote (a " inside a quoted value is written "") and load the file again.`,
  );

const REJECTS = '_csv_rejects';
const REJECT_SCANS = '_csv_reject_scans';
const dropRejects = (s: Store) => s.run(`DROP TABLE IF EXISTS temp.${REJECTS}; DROP TABLE IF EXISTS temp.${REJECT_SCANS}`);

/**
 * Moves the lines the CSV reader set aside into the quarantine, one row per line (DuckDB notes a line once per
 * surplus or missing value): raw {"csv_line": the line as DuckDB read it (bytes that are not UTF-8 shown as ?)}, reason
 * `row: <DuckDB's message> (<error type>)`. No line number: like a row that fails validation, the same bad line
 * in an overlapping report is the same quarantine row. Returns how many lines.
 */
async function csvRejects(s: Store, kind: ReportKind, file: string, shown: string, sha256: string): Promise<number> {
  // A quote never closed leaves the rows after it without boundaries: DuckDB's parallel reader skips the rest
  // of its buffer (40,000 rows vanished in a test). Such a file is refused whole, so nothing goes missing.
  const [open] = await s.all<{ line: string; csv_line: string }>(
    `SELECT line, csv_line FROM temp.${REJECTS} WHERE error_type = 'UNQUOTED VALUE' ORDER BY line LIMIT 1`,
  );
  if (open) throw unclosedQuote(shown, open.line, open.csv_line);
  const [c] = await s.all<{ n: string }>(`SELECT count(DISTINCT (scan_id, file_id, line)) AS n FROM temp.${REJECTS}`);
  if (Number(c.n) > 0) {
    await quarantine(
      s,
      kind,
      `SELECT json_object('csv_line', any_value(csv_line))::VARCHAR AS raw,
                'row: ' || string_agg(message, '; ' ORDER BY error_type) AS reason
         FROM (SELECT scan_id, file_id, line, error_type, any_value(csv_line) AS csv_line,
                      -- one note per column past the header's, or per column missing: the first or last tells the count;
                      -- a note about the whole line (a line longer than the read buffer) has no column
                      coalesce(CASE WHEN error_type = 'MISSING COLUMNS' THEN arg_min(error_message, column_idx) ELSE arg_max(error_message, column_idx) END,
                               any_value(error_message), 'the CSV reader could not read this line')
                        || ' (' || lower(error_type) || ')' AS message
               FROM temp.${REJECTS} GROUP BY scan_id, file_id, line, error_type)
         GROUP BY scan_id, file_id, line`,
      file,
      sha256,
    );
  }
  return Number(c.n);
}

/**
 * What DuckDB reads for one load: a SELECT of the kind's raw columns, plus `_bytes` (the row's text in bytes,
 * where it may be over ROW_LIMIT; else NULL) and `_big_field`/`_big_bytes` (its longest value, for a row cbp
 * read itself). Rows too long for DuckDB's reader are read by cbp (store/long-rows.ts) into a temp table that
 * the SELECT adds; what cbp found to be no row at all waits in another temp table for the quarantine.
 */
interface Reader {
  sql: string;
  /** Records cbp read that are no rows (wrong field count, not UTF-8, too big to parse), waiting in temp._long_rejects. */
  rejected: number;
  /** The files DuckDB is given: in a message, each is the file as the user named it. */
  paths: string[];
  dispose(): Promise<void>;
}

const LONG_ROWS = '_long_rows';
const LONG_REJECTS = '_long_rejects';
/** In the slow path for JSON, records longer than this are parsed by cbp (DuckDB's reader takes 16 MiB for certain). */
const SAFE_JSON_RECORD = 8 * 1024 * 1024;

async function readerSql(store: Store, file: string, shown: string, kind: ReportKind, format: FileFormat, longJson: boolean): Promise<Reader> {
  const cols = RAW_COLUMNS[kind];
  const paths = [file];
  let dir: string | undefined;
  const dispose = async () => {
    await store.run(`DROP TABLE IF EXISTS temp.${LONG_ROWS}; DROP TABLE IF EXISTS temp.${LONG_REJECTS}`);
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
  // The file without some byte ranges: a copy in a private temp folder (0700, the copy 0600), removed by dispose.
  const without = async (cuts: readonly Span[]) => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cbp-load-'));
    const copy = path.join(dir, path.basename(file));
    await copyWithout(file, copy, cuts);
    paths.push(copy);
    return copy;
  };
  const long: LongRow[] = [];
  try {
    let sql: string;
    if (format === 'json') {
      checkJsonShape(file, shown);
      let src = file;
      if (longJson) {
        const els = await scanJsonArray(file, SAFE_JSON_RECORD);
        for (const el of els) {
          try {
            long.push(await parseJsonRecord(file, el, cols));
          } catch (e) {
            throw new BadReportFileError(`${shown} is not valid JSON: ${(e as Error).message}. Repair or fetch the file again, and load it again.`, { cause: e });
          }
        }
        src = await without(els.map((el) => el.cut));
      }
      // Explicit columns: absent keys read as NULL, extra keys are ignored, nested values arrive as JSON text.
      const spec = cols.map((c) => `${q(c)}: 'VARCHAR'`).join(', ');
      // Only a file bigger than ROW_LIMIT can hold a row over it: elsewhere the sum is not even computed.
      const bytes = statSync(file).size > ROW_LIMIT ? cols.map((c) => `coalesce(strlen(${ident(c)}), 0)`).join(' + ') : 'NULL::BIGINT';
      sql = `SELECT *, ${bytes} AS _bytes, NULL::VARCHAR AS _big_field, NULL::BIGINT AS _big_bytes FROM read_json(${q(src)}, format='array', columns={${spec}})`;
    } else {
      // A row DuckDB cannot split against the header (more or fewer values than columns, bytes that are not
      // UTF-8) is set aside in a temp table instead of failing the load: it goes to the quarantine (csvRejects).
      // No null_padding: with it DuckDB's parallel reader refuses any file bigger than one buffer that holds a
      // quoted line break, and a short row is as malformed as a long one.
      const dialect = `header=true, delim=',', quote='"', escape='"', null_padding=false, store_rejects=true, rejects_scan='${REJECT_SCANS}', rejects_table='${REJECTS}'`;
      let names = csvHeader(file);
      if (!names || !names.some((h) => h.trim() !== '')) {
        // A header cbp cannot parse for certain: DuckDB's sniffer names the columns; the read itself is the same.
        try {
          // Only the header's names are wanted here: a bad row in the sniffer's sample must not stop it (the read
          // judges rows), and without null_padding a long row cannot widen the header with made-up columns.
          const sniff = `read_csv(${q(file)}, header=true, delim=',', quote='"', escape='"', all_varchar=true, ignore_errors=true)`;
          names = (await store.all<{ column_name: string }>(`DESCRIBE SELECT * FROM ${sniff}`)).map((r) => r.column_name);
        } catch (e) {
          throw readFailure(e, { shown, paths, format, kind, what: 'is not a readable CSV report' });
        }
      }
      const columns = names.map((_, i) => `c${i}`);
      // A header name matches whatever its case and padding; of two columns with the same name, the first counts.
      const byName = new Map<string, string>();
      names.forEach((h, i) => {
        const key = h.replace(/^\uFEFF/, '').trim().toLowerCase();
        if (!byName.has(key)) byName.set(key, columns[i]);
      });
      if (!byName.has(CSV_IDENTITY[kind])) {
        throw new BadReportFileError(
          `${shown} is not a ${kind} CSV report: its header has no ${CSV_IDENTITY[kind]} column (columns: ${names.slice(0, 8).join(', ')}${names.length > 8 ? ', …' : ''}).`,
        );
      }
      // Records longer than DuckDB's reader takes for certain are found first (a few tens of milliseconds for
      // a 1M-row file) and read by cbp; a file that ends inside a quoted value is refused here.
      let src = file;
      if (statSync(file).size > SAFE_CSV_RECORD) {
        const scan = await scanCsv(file, SAFE_CSV_RECORD);
        if (scan.unclosed !== undefined) {
          const at = await lineAt(file, scan.unclosed);
          throw unclosedQuote(shown, at.line, at.text);
        }
        if (scan.long.length > 0) {
          const header = scan.long[0].start === 0 ? scan.long[0] : undefined;
          if (header) {
            throw new BadReportFileError(
              `${shown} is not a CSV report: its first line, which should be the header naming the columns, is ${((header.end - header.start) / 1048576).toFixed(1)} MiB long.`,
            );
          }
          const byPos = columns.map((c) => cols.find((raw) => byName.get(raw) === c));
          for (const span of scan.long) long.push(await parseCsvRecord(file, span, byPos));
          src = await without(scan.long);
        }
      }
      // Columns named by position, all text: no sniffing, and the header's own spelling cannot clash with SQL.
      // 8 MiB read buffers instead of DuckDB's 32 MiB: a 1M-row load peaked at 341–363 MB of process RSS instead
      // of 383–451 MB, at the same speed (no record longer than SAFE_CSV_RECORD reaches the reader).
      const csv = `read_csv(${q(src)}, ${dialect}, buffer_size=${8 << 20}, auto_detect=false, columns={${columns.map((c) => `${q(c)}: 'VARCHAR'`).join(', ')}})`;
      const select = cols.map((c) => (byName.has(c) ? `${ident(byName.get(c)!)} AS ${ident(c)}` : `NULL::VARCHAR AS ${ident(c)}`));
      sql = `SELECT ${select.join(', ')}, NULL::BIGINT AS _bytes, NULL::VARCHAR AS _big_field, NULL::BIGINT AS _big_bytes FROM ${csv}`;
    }
    const rows = long.filter((r): r is Extract<LongRow, { ok: true }> => r.ok);
    const rejects = long.filter((r): r is Extract<LongRow, { ok: false }> => !r.ok);
    if (rows.length > 0) {
      await store.run(
        `CREATE OR REPLACE TEMP TABLE ${LONG_ROWS} (${cols.map((c) => `${ident(c)} VARCHAR`).join(', ')}, _bytes BIGINT, _big_field VARCHAR, _big_bytes BIGINT)`,
      );
      const marks = [...cols, 'b', 'f', 'n'].map((_, i) => `$${i + 1}`).join(', ');
      for (const r of rows) {
        await store.run(`INSERT INTO temp.${LONG_ROWS} VALUES (${marks})`, [...cols.map((c) => r.values[c] ?? null), r.bytes, r.bigField, r.bigBytes]);
      }
      sql += `\nUNION ALL SELECT * FROM temp.${LONG_ROWS}`;
    }
    if (rejects.length > 0) {
      await store.run(`CREATE OR REPLACE TEMP TABLE ${LONG_REJECTS} (raw VARCHAR, reason VARCHAR)`);
      for (const r of rejects) await store.run(`INSERT INTO temp.${LONG_REJECTS} VALUES ($1, $2)`, [r.raw, r.reason]);
    }
    return { sql, rejected: rejects.length, paths, dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Typing and validation, one SELECT per kind over the raw columns.

function chargebackStaging(reader: string): Staging {
  const typed = {
    mid: nz('mid'),
    case_number: nz('case_number'),
    status: statusT('status'),
    arn: txt('arn'),
    card_number: txt('card_number'),
    card_type: brandT('card_type'),
    amount: amountT('amount'),
    currency: currencyT('currency'),
    reason_code: txt('reason_code'),
    reason: txt('reason'),
    date_received: tsT('date_received'),
    transaction_date: tsT('transaction_date'),
    order_id: txt('order_id'),
    name: txt('name'),
    tracking_number: txt('tracking_number'),
  };
  const checks = [
    required('case_number', 'case_number'),
    required('mid', 'mid'),
    check(`t_status IS NULL`, 'status', `one of ${CHARGEBACK_STATUSES.join(', ')}`, 'status'),
    check(`t_amount IS NULL`, 'amount', AMOUNT_EXPECT, 'amount'),
    optional('card_type', 't_card_type', 'card_type', `a card brand (${CARD_BRANDS.join(', ')})`),
    optional('currency', 't_currency', 'currency', 'a three-letter ISO 4217 code such as USD'),
    optional('date_received', 't_date_received', 'date_received', DT_EXPECT),
    optional('transaction_date', 't_transaction_date', 'transaction_date', DT_EXPECT),
  ];
  return stagingSql(reader, 'chargebacks', typed, checks, ['mid', 'case_number']);
}

function preventionStaging(reader: string): Staging {
  // A JSON array (or its text in a CSV cell), else a ";"-joined list; empty means no statuses.
  const list = `CASE WHEN ${nz('statuses')} IS NULL THEN []::VARCHAR[]
    WHEN starts_with(trim(statuses), '[') THEN CASE WHEN json_valid(trim(statuses)) AND json_type(trim(statuses)::JSON) = 'ARRAY' THEN from_json(trim(statuses)::JSON, '["VARCHAR"]') END
    ELSE list_filter(list_transform(string_split(statuses, ';'), x -> trim(x)), x -> x <> '') END`;
  const typed = {
    alert_case_id: nz('alert_case_id'),
    statuses_in: list,
    arn: txt('arn'),
    mid: nz('mid'),
    merchant_descriptor: txt('merchant_descriptor'),
    source_partner: enumT('source_partner', SOURCE_PARTNERS, `lower(trim(source_partner))`),
    bin: txt('bin'),
    last_four: txt('last_four'),
    amount: amountT('amount'),
    currency: currencyT('currency'),
    date_received: tsT('date_received'),
    transaction_date: tsT('transaction_date'),
    order_id: txt('order_id'),
    name: txt('name'),
  };
  const statusesNorm = `list_transform(t_statuses_in, x -> ${enumT('x', PREVENTION_STATUSES, 'lower(trim(x))')})`;
  const checks = [
    required('alert_case_id', 'alert_case_id'),
    check(
      `t_statuses_in IS NULL OR len(list_filter(${statusesNorm}, x -> x IS NOT NULL)) <> len(t_statuses_in)`,
      'statuses',
      `a list of ${PREVENTION_STATUSES.join(', ')}`,
      'statuses',
    ),
    check(`t_source_partner IS NULL`, 'source_partner', `one of ${SOURCE_PARTNERS.join(', ')}`, 'source_partner'),
    check(`t_amount IS NULL`, 'amount', AMOUNT_EXPECT, 'amount'),
    optional('currency', 't_currency', 'currency', 'a three-letter ISO 4217 code such as USD'),
    optional('date_received', 't_date_received', 'date_received', DT_EXPECT),
    optional('transaction_date', 't_transaction_date', 'transaction_date', DT_EXPECT),
  ];
  return stagingSql(reader, 'prevention', typed, checks, ['alert_case_id'], {
    statuses: statusesNorm,
    status: `${statusesNorm}[-1]`,
  });
}

function midStaging(reader: string): Staging {
  const typed: Record<string, string> = {
    mid: nz('mid'),
    alias: txt('alias'),
    gateways: `CASE WHEN ${nz('gateways')} IS NULL THEN NULL
      WHEN starts_with(trim(gateways), '[') AND json_valid(trim(gateways)) THEN from_json(trim(gateways)::JSON, '["VARCHAR"]')
      ELSE list_filter(list_transform(string_split(gateways, ';'), x -> trim(x)), x -> x <> '') END`,
  };
  const checks: Check[] = [required('mid', 'mid')];
  const stat = (prefix: string, f: string, raw: string, isOptional: boolean) => {
    const name = `${prefix}${f}`;
    const isCount = f.endsWith('_count');
    const isRatio = f.endsWith('_ratio');
    typed[name] = isCount ? countT(raw) : isRatio ? floatT(raw) : amountT(raw);
    const label = prefix ? `${prefix.replace(/_$/, '')}.${f}` : f;
    const expect = isCount ? 'a whole count (0, 1, 2, ...)' : isRatio ? 'a number or empty' : AMOUNT_EXPECT;
    checks.push(isOptional || isRatio ? check(optBad(raw, `t_${name}`), label, expect, raw, `t_${name} IS NULL`) : check(`t_${name} IS NULL`, label, expect, raw));
  };
  for (const f of STAT_FIELDS) stat('', f, f, false);
  for (const k of MID_NETWORK_KEYS) {
    const obj = `coalesce(${MID_OBJECT_ALIASES[k].map((c) => nz(c)).join(', ')})`;
    const raws = netFields(k).map((f) => ({ f, raw: `coalesce(json_extract_string(${obj}, ${q(`$.${f}`)}), ${ident(`${k}_${f}`)})` }));
    const present = `(${obj} IS NOT NULL OR coalesce(${netFields(k).map((f) => nz(ident(`${k}_${f}`))).join(', ')}) IS NOT NULL)`;
    typed[`${k}_present`] = present;
    for (const { f, raw } of raws) {
      const isExtra = MC_EXTRA.includes(f);
      const name = `${k}_${f}`;
      const isCount = f.endsWith('_count');
      const isRatio = f.endsWith('_ratio');
      typed[name] = isCount ? countT(raw) : isRatio ? floatT(raw) : amountT(raw);
      const expect = isCount ? 'a whole count (0, 1, 2, ...)' : isRatio ? 'a number or empty' : AMOUNT_EXPECT;
      // Figures of an absent network object are not required; of a present one they are (ratios may be empty).
      const bad = isExtra || isRatio ? optBad(raw, `t_${name}`) : `(t_${k}_present AND t_${name} IS NULL)`;
      checks.push(check(bad, `${k}.${f}`, expect, raw));
    }
  }
  return stagingSql(reader, 'mid_report', typed, checks, ['mid']);
}

/**
 * One pass: raw → typed (t_ columns) → reason → staging, keeping every bad row and one good row per key.
 * `after` adds columns computed from typed ones (e.g. a normalised list).
 */
function stagingSql(reader: string, kind: ReportKind, typed: Record<string, string>, checks: Check[], key: string[], after: Record<string, string> = {}): Staging {
  const raw = RAW_COLUMNS[kind];
  // A row over ROW_LIMIT keeps only the first HEAD_CHARS characters of each longer value (the whole row stays in
  // its landing file); any other row is kept as read.
  const cut = (c: string) => `CASE WHEN _bytes > ${ROW_LIMIT} AND length(${c}) > ${HEAD_CHARS} THEN left(${c}, ${HEAD_CHARS}) || '…' ELSE ${c} END`;
  const rawJson = `to_json(struct_pack(${raw.map((c) => `${ident(c)} := ${cut(ident(c))}`).join(', ')}))::VARCHAR`;
  // Its longest value, named in the reason: given by cbp for a row it read itself, else found here.
  const longest = `list_sort([${raw.map((c) => `struct_pack(n := coalesce(strlen(${ident(c)}), 0), f := ${q(c)})`).join(', ')}], 'DESC')[1]`;
  const sizeReason = `'row: ' || printf('%.1f', _bytes / 1048576) || ' MiB, over the ${ROW_LIMIT / 1048576} MiB limit for one row (its longest value, ' ||
    coalesce(_big_field, struct_extract(${longest}, 'f')) || ', is ' || printf('%.1f', coalesce(_big_bytes, struct_extract(${longest}, 'n')) / 1048576) || ' MiB)'`;
  const sig = DISTINCTIVE[kind].map((c) => `${ident(c)} IS NOT NULL`).join(' OR ');
  const out = [...Object.keys(typed).map((k) => `t_${k} AS ${ident(k)}`), ...Object.entries(after).map(([k, e]) => `${e} AS ${ident(k)}`)];
  // Duplicates are rare, and a window over every row costs as much as the read: staging keeps them, and
  // dedupeSql runs only when a count shows there are some.
  const select = `WITH src AS (${reader}),
t AS (SELECT *, ${Object.entries(typed).map(([k, e]) => `${e} AS t_${k}`).join(',\n  ')} FROM src),
v AS (SELECT *, CASE WHEN _bytes > ${ROW_LIMIT} THEN ${sizeReason}
  WHEN ${checks.map((c) => `(${c.gate})`).join(' OR ')} THEN NULLIF(concat_ws('; ', ${checks.map((c) => c.reason).join(',\n  ')}), '') END AS _reason, (${sig}) AS _sig FROM t)
SELECT ${out.join(', ')}, _reason AS _why, _sig,
  CASE WHEN _reason IS NOT NULL THEN ${rawJson} END AS _raw
FROM v`;
  const create = `CREATE OR REPLACE TEMP TABLE _stg AS\n${select}`;
  const keys = key.map(ident).join(', ');
  // Of duplicate keys inside one file, one is kept by content order, so the choice never depends on read order.
  const dedupe = `CREATE OR REPLACE TEMP TABLE _stg AS SELECT * FROM _stg
QUALIFY _why IS NOT NULL OR row_number() OVER (PARTITION BY _why IS NULL, ${keys} ORDER BY ${Object.keys(typed).map(ident).join(', ')}) = 1`;
  const stats = `SELECT count(*) AS read, count(*) FILTER (WHERE _why IS NULL) AS good, count(*) FILTER (WHERE _why IS NOT NULL) AS bad,
  count(*) FILTER (WHERE _sig) AS sig, count(DISTINCT (${keys})) FILTER (WHERE _why IS NULL) AS keys FROM _stg`;
  return { select, create, dedupe, stats };
}

interface Staging {
  /** The typing, validating SELECT (typed columns, _why, _sig, _raw) that `create` stores as _stg. */
  select: string;
  create: string;
  dedupe: string;
  stats: string;
}

// ---------------------------------------------------------------------------------------------------------
// Moving staging into the store.

/**
 * A stored row gives way to the incoming one ($1 = seen_at, $2 = landing file) unless it was observed later.
 * Two files observed at the same instant are ordered by file name, so the outcome never depends on load order.
 */
const NOT_NEWER = (seenCol: string, fileCol: string) => `(${seenCol} < $1::TIMESTAMP OR (${seenCol} = $1::TIMESTAMP AND ${fileCol} <= $2))`;

/** Replaces rows whose stored observation is not newer; widens first_seen_at of rows that are newer. */
async function upsertState(s: Store, table: string, key: string[], cols: string[], seen: string, file: string, empty: boolean): Promise<void> {
  const on = (a: string, b: string) => key.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
  const values = cols.map((c) => `s.${ident(c)}`).join(', ');
  if (empty) {
    await s.run(`INSERT INTO ${table} SELECT ${values}, $1::TIMESTAMP, $1::TIMESTAMP, $2 FROM _stg s WHERE s._why IS NULL`, [seen, file]);
    return;
  }
  await s.run(
    `UPDATE ${table} c SET first_seen_at = $1::TIMESTAMP FROM _stg s
     WHERE s._why IS NULL AND ${on('c', 's')} AND c.last_seen_at > $1::TIMESTAMP AND c.first_seen_at > $1::TIMESTAMP`,
    [seen],
  );
  await s.run(
    `CREATE OR REPLACE TEMP TABLE _repl AS SELECT ${key.map((k) => `c.${k}`).join(', ')}, c.first_seen_at FROM ${table} c JOIN _stg s ON ${on('c', 's')}
     WHERE s._why IS NULL AND ${NOT_NEWER('c.last_seen_at', 'c.landing_file')}`,
    [seen, file],
  );
  await s.run(`DELETE FROM ${table} c USING _repl r WHERE ${on('c', 'r')}`);
  await s.run(
    `INSERT INTO ${table} SELECT ${values}, least(coalesce(r.first_seen_at, $1::TIMESTAMP), $1::TIMESTAMP), $1::TIMESTAMP, $2
     FROM _stg s LEFT JOIN _repl r ON ${on('s', 'r')}
     WHERE s._why IS NULL AND NOT EXISTS (SELECT 1 FROM ${table} c WHERE ${on('c', 's')})`,
    [seen, file],
  );
  await s.run('DROP TABLE _repl');
}

/**
 * Adds a history row where the observed status differs from the one in force at that time; if the next
 * recorded change is to the same status, it was in fact first seen now, so it moves earlier.
 */
async function addHistory(s: Store, table: string, key: string[], seen: string, file: string, empty: boolean): Promise<void> {
  const keys = key.join(', ');
  if (empty) {
    await s.run(`INSERT INTO ${table} SELECT ${keys}, status, $1::TIMESTAMP, $2 FROM _stg WHERE _why IS NULL`, [seen, file]);
    return;
  }
  const on = (a: string, b: string) => key.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
  await s.run(
    `CREATE OR REPLACE TEMP TABLE _h AS
     SELECT ${key.map((k) => `i.${k}`).join(', ')}, i.status, i.seen_at, p.status AS prev_status, p.seen_at AS prev_seen_at,
            n.status AS next_status, n.seen_at AS next_seen_at
     FROM (SELECT ${keys}, status, $1::TIMESTAMP AS seen_at FROM _stg WHERE _why IS NULL) i
     ASOF LEFT JOIN ${table} p ON ${on('i', 'p')} AND i.seen_at >= p.seen_at
     ASOF LEFT JOIN ${table} n ON ${on('i', 'n')} AND i.seen_at < n.seen_at`,
    [seen],
  );
  await s.run(
    `DELETE FROM ${table} h USING _h i WHERE ${on('h', 'i')} AND h.seen_at = i.next_seen_at
     AND i.next_status IS NOT DISTINCT FROM i.status AND (i.prev_seen_at IS NULL OR i.prev_status IS DISTINCT FROM i.status)`,
  );
  await s.run(
    `INSERT INTO ${table} SELECT ${keys}, status, seen_at, $1 FROM _h WHERE prev_seen_at IS NULL OR prev_status IS DISTINCT FROM status`,
    [file],
  );
  await s.run('DROP TABLE _h');
}

async function isEmpty(s: Store, table: string): Promise<boolean> {
  const [r] = await s.all<{ n: boolean }>(`SELECT NOT EXISTS (SELECT 1 FROM ${table}) AS n`);
  return Boolean(r.n);
}

const CHARGEBACK_STATE_COLUMNS = ['mid', 'case_number', 'status', 'arn', 'card_number', 'card_type', 'amount', 'currency', 'reason_code', 'reason', 'date_received', 'transaction_date', 'order_id', 'name', 'tracking_number'];

/** A case whose only history row is implied by its chargebacks row (see 001_reports.sql). */
const IMPLIED_HISTORY = `EXISTS (SELECT 1 FROM chargeback_initial_loads i WHERE i.landing_file = c.landing_file AND i.seen_at = c.last_seen_at)
  AND NOT EXISTS (SELECT 1 FROM chargeback_status_log l WHERE l.mid = c.mid AND l.case_number = c.case_number)`;

async function moveChargebacks(s: Store, seen: string, file: string): Promise<void> {
  // The cases this load touches get their implied history row written out first: from here on the log
  // alone holds their history, and the state update below may change the row it was implied by.
  await s.run(
    `INSERT INTO chargeback_status_log SELECT c.mid, c.case_number, c.status, c.last_seen_at, c.landing_file FROM chargebacks c
     WHERE EXISTS (SELECT 1 FROM _stg s WHERE s._why IS NULL AND s.mid = c.mid AND s.case_number = c.case_number) AND ${IMPLIED_HISTORY}`,
  );
  await upsertState(s, 'chargebacks', ['mid', 'case_number'], CHARGEBACK_STATE_COLUMNS, seen, file, await isEmpty(s, 'chargebacks'));
  await addHistory(s, 'chargeback_status_log', ['mid', 'case_number'], seen, file, await isEmpty(s, 'chargeback_status_log'));
}

/**
 * A first load into an empty store: one statement reads, types and validates the file straight into
 * chargebacks (no staging table: staging cost as much as the read, and a second write of every row).
 * A bad row is parked in the same table until it is moved to the quarantine, a few statements later and
 * in the same transaction: landing_file NULL marks it (a stored row always has one), `reason` holds why
 * and `name` the row as received. Each case's first history row is implied by its chargebacks row (the
 * load is listed in chargeback_initial_loads), not written a second time.
 */
async function firstLoadChargebacks(
  s: Store, select: string, file: string, shown: string, seen: string, sha256: Promise<string>,
): Promise<{ read: number; bad: number; keys: number }> {
  const values = CHARGEBACK_STATE_COLUMNS.map((c) =>
    c === 'reason' ? 'CASE WHEN _why IS NULL THEN reason ELSE _why END' : c === 'name' ? 'CASE WHEN _why IS NULL THEN name ELSE _raw END' : ident(c),
  );
  const [ins] = await s.all<{ Count: string | number }>(
    `INSERT INTO chargebacks SELECT ${values.join(', ')}, $1::TIMESTAMP, $1::TIMESTAMP, CASE WHEN _why IS NULL THEN $2 END FROM (${select})`,
    [seen, file],
  );
  const read = Number(ins?.Count ?? 0);
  // A bad row's NULL landing_file: the column's statistics answer this without a scan when there is none.
  const [st] = await s.all<{ bad: string }>(`SELECT count(*) AS bad FROM chargebacks WHERE landing_file IS NULL`);
  const bad = Number(st.bad);
  let keys = read - bad;
  if (bad > 0) {
    if (bad === read) {
      const sig = DISTINCTIVE.chargebacks.map((c) => `json_extract_string(name, ${q(`$.${c}`)}) IS NOT NULL`).join(' OR ');
      const [r] = await s.all<{ n: string }>(`SELECT count(*) FILTER (WHERE ${sig}) AS n FROM chargebacks WHERE landing_file IS NULL`);
      if (Number(r.n) === 0) {
        throw new BadReportFileError(
          `${shown} is not a chargebacks report: none of its ${read} records has any of ${DISTINCTIVE.chargebacks.slice(0, 4).join(', ')}, … (another report kind?)`,
        );
      }
    }
    await quarantine(s, 'chargebacks', 'SELECT name AS raw, reason FROM chargebacks WHERE landing_file IS NULL', file, await sha256);
    await s.run('DELETE FROM chargebacks WHERE landing_file IS NULL');
  }
  // Distinct case numbers prove distinct (mid, case_number) keys; only a shortfall (a repeated case, or one
  // case number under two MIDs) needs the exact de-duplication.
  const [d] = keys > 0 ? await s.all<{ n: string }>('SELECT count(DISTINCT case_number) AS n FROM chargebacks') : [{ n: '0' }];
  if (Number(d.n) < keys) {
    // Of duplicate keys inside one file, one is kept by content order, as the staging path does.
    const [del] = await s.all<{ Count: string | number }>(
      `DELETE FROM chargebacks WHERE rowid IN (SELECT rowid FROM chargebacks
       QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY ${CHARGEBACK_STATE_COLUMNS.map(ident).join(', ')}) > 1)`,
    );
    keys -= Number(del?.Count ?? 0);
  }
  if (keys > 0) await s.run('INSERT INTO chargeback_initial_loads VALUES ($1, $2::TIMESTAMP)', [file, seen]);
  return { read, bad, keys };
}

async function movePrevention(s: Store, seen: string, file: string): Promise<void> {
  const cols = ['alert_case_id', 'status', 'statuses', 'arn', 'mid', 'merchant_descriptor', 'source_partner', 'bin', 'last_four', 'amount', 'currency', 'date_received', 'transaction_date', 'order_id', 'name'];
  await upsertState(s, 'prevention_alerts', ['alert_case_id'], cols, seen, file, await isEmpty(s, 'prevention_alerts'));
  await addHistory(s, 'prevention_status_history', ['alert_case_id'], seen, file, await isEmpty(s, 'prevention_status_history'));
}

async function moveMidStats(s: Store, w: Window, seen: string, file: string): Promise<void> {
  const figures = (p: string, extra: boolean) =>
    `${p}chargeback_count, ${p}chargeback_amount, ${p}transaction_count, ${p}transaction_amount, ${p}chargeback_ratio, ${p}chargeback_amount_ratio, ` +
    (extra ? `${p}previous_month_transaction_count, ${p}previous_month_transaction_amount` : 'NULL, NULL');
  const rows = [
    `SELECT mid, 'all' AS network, ${figures('', false)} FROM _stg WHERE _why IS NULL`,
    ...MID_NETWORK_KEYS.map(
      (k) => `SELECT mid, ${q(MID_KEY_NETWORK[k])}, ${figures(`${k}_`, k === 'master_card')} FROM _stg WHERE _why IS NULL AND ${k}_present`,
    ),
  ].join('\nUNION ALL ');
  // A record replaces the whole (mid, window) it describes, unless the stored figures were observed later.
  await s.run(
    `DELETE FROM mid_stats m USING _stg s WHERE s._why IS NULL AND m.mid = s.mid AND m.window_start = $3::DATE AND m.window_end = $4::DATE
     AND ${NOT_NEWER('m.seen_at', 'm.landing_file')}`,
    [seen, file, w.start, w.end],
  );
  await s.run(
    `INSERT INTO mid_stats SELECT r.mid, $1::DATE, $2::DATE, r.* EXCLUDE (mid), $3::TIMESTAMP, $4 FROM (${rows}) r
     WHERE NOT EXISTS (SELECT 1 FROM mid_stats m WHERE m.mid = r.mid AND m.window_start = $1::DATE AND m.window_end = $2::DATE)`,
    [w.start, w.end, seen, file],
  );
  await s.run(`DELETE FROM mids m USING _stg s WHERE s._why IS NULL AND m.mid = s.mid AND ${NOT_NEWER('m.last_seen_at', 'm.landing_file')}`, [seen, file]);
  await s.run(
    `INSERT INTO mids SELECT s.mid, s.alias, s.gateways, $1::TIMESTAMP, $2 FROM _stg s
     WHERE s._why IS NULL AND NOT EXISTS (SELECT 1 FROM mids m WHERE m.mid = s.mid)`,
    [seen, file],
  );
}

// ---------------------------------------------------------------------------------------------------------

export function normaliseWindow(w: { start: string; end: string } | undefined | null, what = 'window'): Window | null {
  if (!w) return null;
  const day = (v: string, f: string) => {
    const iso = toIsoUtc(String(v), true);
    if (!iso) throw new UsageError(`${what} ${f} must be a date YYYY-MM-DD (UTC), got ${JSON.stringify(v)}`);
    return iso.slice(0, 10);
  };
  const out = { start: day(w.start, 'start'), end: day(w.end, 'end') };
  if (out.start > out.end) throw new UsageError(`${what} start ${out.start} is after its end ${out.end}`);
  return out;
}

function seenAtFor(opts: LoadOptions, meta: LandingMeta | undefined, w: Window | null, file: string): string {
  const pick = opts.seenAt ?? meta?.fetched_at;
  if (pick) {
    const iso = toIsoUtc(pick, true);
    if (!iso) throw new UsageError(`seenAt must be a UTC date-time, got ${JSON.stringify(pick)}`);
    return iso;
  }
  if (w) return `${w.end}T23:59:59Z`;
  return new Date(Math.floor(statSync(file).mtimeMs / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** When exactly this load was made before (landing file, digest, kind, window, seen_at): bumps its log row and returns it. */
async function repeatOf(
  store: Store, l: { landing: string; kind: ReportKind; format: FileFormat; window: Window | null; seen: string; sha256: string },
): Promise<LoadResult | undefined> {
  const where = `landing_file = $1 AND sha256 = $2 AND kind = $3 AND window_start IS NOT DISTINCT FROM $4::DATE
    AND window_end IS NOT DISTINCT FROM $5::DATE AND seen_at = $6::TIMESTAMP`;
  const params = [l.landing, l.sha256, l.kind, l.window?.start ?? null, l.window?.end ?? null, l.seen];
  return store.transaction(async (s) => {
    const [prior] = await s.all<{ rows_read: string; rows_loaded: string; quarantined: string }>(
      `SELECT rows_read, rows_loaded, quarantined FROM loads WHERE ${where}`,
      params,
    );
    if (!prior) return undefined;
    await s.run(`UPDATE loads SET last_loaded_at = current_timestamp::TIMESTAMP, load_count = load_count + 1 WHERE ${where}`, params);
    return {
      file: l.landing, kind: l.kind, format: l.format, window: l.window, seenAt: l.seen, sha256: l.sha256,
      rowsRead: Number(prior.rows_read), rowsLoaded: Number(prior.rows_loaded), quarantined: Number(prior.quarantined), reloaded: true,
    };
  });
}

// Loads on one store run one at a time: they share the connection's temp staging table.
const queues = new WeakMap<Store, Promise<unknown>>();

/** Loads one report file (usually a landing file) in one transaction. Safe to repeat. */
export function loadReport(store: Store, file: string, opts: LoadOptions): Promise<LoadResult> {
  const prev = queues.get(store) ?? Promise.resolve();
  const next = prev.catch(() => undefined).then(() => loadOne(store, file, opts));
  queues.set(store, next);
  return next;
}

/** A record DuckDB's JSON reader refused for its size: the load is tried again with cbp reading the long records. */
class RecordTooBigError extends BadReportFileError {}

/**
 * A failure to read a report file, in the user's words with the path as they gave it (never DuckDB's own
 * message alone): what happened and what to do.
 */
export function readFailure(
  e: unknown,
  c: { shown: string; paths?: readonly string[]; format: FileFormat; kind: ReportKind; what?: string },
): CbpError {
  const err = e as NodeJS.ErrnoException;
  let msg = err instanceof Error ? err.message : String(e);
  for (const p of [...(c.paths ?? [])].sort((a, b) => b.length - a.length)) msg = msg.split(p).join(c.shown);
  const first = msg.split('\n')[0].replace(/^[A-Za-z ]*Error: /, '').trim();
  const opts = { cause: e };
  const code = err?.code;
  if (code === 'ENOENT' || /No such file or directory|No files found that match/i.test(msg)) {
    return new NotFoundError(`report file ${c.shown} does not exist: check the path and load it again`, opts);
  }
  if (code === 'EACCES' || code === 'EPERM' || /Permission denied/i.test(msg)) {
    return new BadReportFileError(`cannot read ${c.shown}: permission denied. Let the user running cbp read it (e.g. chmod u+r) and load it again.`, opts);
  }
  if (code === 'EISDIR' || /Is a directory/i.test(msg)) {
    return new BadReportFileError(`${c.shown} is a folder, not a report file: give the path of the report file itself.`, opts);
  }
  if (/maximum_object_size/.test(msg)) {
    const size = /\(>(\d+) bytes\)/.exec(msg)?.[1];
    return new RecordTooBigError(
      `${c.shown} holds a JSON record ${size ? `of more than ${(Number(size) / 1048576).toFixed(1)} MiB ` : ''}that DuckDB's reader cannot take, and cbp could not set it apart either. Split the report into smaller files (a shorter window) and load them.`,
      opts,
    );
  }
  if (/Malformed JSON/i.test(msg)) {
    const where = /at byte (\d+) in record\/value (\d+): (.*)$/.exec(first);
    const detail = where ? `${where[3].replace(/\.\s*$/, '')} (byte ${where[1]}, record ${where[2]})` : first;
    if (/UTF-8/i.test(first)) {
      return new BadReportFileError(`${c.shown} is not UTF-8 text: ${detail}. Save or export it as UTF-8 and load it again.`, opts);
    }
    return new BadReportFileError(`${c.shown} is not valid JSON: ${detail}. Repair or fetch the file again, and load it again.`, opts);
  }
  if (/state machine reached an invalid state/i.test(msg)) {
    return new BadReportFileError(
      `${c.shown} could not be split into CSV rows (DuckDB's reader: "${first}"). A common cause is line breaks of two kinds in one file (some lines ending in a lone CR): save it with one kind of line break and load it again.`,
      opts,
    );
  }
  if (/Out of Memory/i.test(msg)) {
    return new StoreUnavailableError(
      `the store ran out of memory reading ${c.shown}: raise CBP_STORE_MEMORY_LIMIT (default 256MB), or load it again when other work on this machine is done.`,
      opts,
    );
  }
  if (code === 'ENOSPC' || /No space left on device/i.test(msg)) {
    return new StoreUnavailableError(`the disk is full while loading ${c.shown}: free some space and load it again.`, opts);
  }
  if (e instanceof BadReportFileError || e instanceof NotFoundError || e instanceof StoreUnavailableError) return e;
  return new BadReportFileError(`${c.shown} ${c.what ?? `could not be read as a ${c.format.toUpperCase()} ${c.kind} report`}: ${first}`, opts);
}

/** The file can be opened for reading (it exists, is a file, may be read), else a CbpError saying so. */
export function checkReadable(file: string, shown: string, format: FileFormat, kind: ReportKind): void {
  try {
    if (statSync(file).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    closeSync(openSync(file, 'r'));
  } catch (e) {
    throw readFailure(e, { shown, format, kind });
  }
}

async function loadOne(store: Store, file: string, opts: LoadOptions): Promise<LoadResult> {
  const { kind } = opts;
  const format = opts.format ?? inferFormat(file);
  if (!format) throw new UsageError(`Cannot tell the format of ${file} from its extension: pass --format json or --format csv`);
  checkReadable(file, file, format, kind);
  const meta = readMeta(file);
  const w = normaliseWindow(opts.window ?? (meta?.start && meta?.end ? { start: meta.start, end: meta.end } : null));
  if (kind === 'mid_report' && !w) {
    throw new UsageError('A MID report needs its window (its records carry no dates): give --from YYYY-MM-DD --to YYYY-MM-DD (inclusive, UTC)');
  }
  const seen = seenAtFor(opts, meta, w, file);
  // Hashing a big file costs about a third of reading it into DuckDB: it overlaps the read instead.
  // The sidecar's digest holds while the file is as landed: same size, not modified after its sidecar was written.
  const st = statSync(file);
  const digest = meta?.sha256 && meta.bytes === st.size && st.mtimeMs <= statSync(metaPath(file)).mtimeMs ? meta.sha256 : undefined;
  const sha256Pending = digest ? Promise.resolve(digest) : sha256Stream(file);
  sha256Pending.catch(() => undefined);
  const landing = path.resolve(file);
  // The same landing file, bytes and observation loaded before (a retried activity, a re-run backfill): one
  // load already left the store as this one would, so only the log is touched. Known only when the sidecar
  // gives the digest; a bare file is loaded in full (same result, just slower).
  if (digest) {
    const again = await repeatOf(store, { landing, kind, format, window: w, seen, sha256: digest });
    if (again) return again;
  }
  checkNotUtf16(file, file);
  const sizeZero = isBlank(file);
  const run = { store, file, landing, kind, format, w, seen, sha256Pending, sizeZero, beforeCommit: opts.beforeCommit };
  try {
    return await loadWith(run, false);
  } catch (e) {
    // DuckDB's JSON reader refused a record for its size (where it gives up depends on where the record lies):
    // again, with cbp reading the long records itself. Nothing was stored by the first try.
    if (!(e instanceof RecordTooBigError) || format !== 'json') throw e;
    return await loadWith(run, true);
  }
}

async function loadWith(
  run: {
    store: Store; file: string; landing: string; kind: ReportKind; format: FileFormat; w: Window | null; seen: string;
    sha256Pending: Promise<string>; sizeZero: boolean; beforeCommit?: () => Promise<void> | void;
  },
  longJson: boolean,
): Promise<LoadResult> {
  const { store, file, landing, kind, format, w, seen, sha256Pending, sizeZero } = run;
  let rowsRead = 0;
  let rowsLoaded = 0;
  let quarantined = 0;
  let staging: Staging | undefined;
  let reader: Reader | undefined;
  const failed = (e: unknown) => readFailure(e, { shown: file, paths: reader?.paths, format, kind });
  if (!sizeZero) {
    await dropRejects(store);
    reader = await readerSql(store, landing, file, kind, format, longJson);
    staging = kind === 'chargebacks' ? chargebackStaging(reader.sql) : kind === 'prevention' ? preventionStaging(reader.sql) : midStaging(reader.sql);
  }
  const stage = async (st: Staging) => {
    try {
      await store.run(st.create);
    } catch (e) {
      throw failed(e);
    }
    const [c] = await store.all<{ read: string; good: string; bad: string; sig: string; keys: string }>(st.stats);
    rowsRead = Number(c.read);
    quarantined = Number(c.bad);
    rowsLoaded = Number(c.keys);
    if (rowsRead > 0 && Number(c.sig) === 0) {
      await store.run('DROP TABLE IF EXISTS _stg');
      throw new BadReportFileError(
        `${file} is not a ${kind} report: none of its ${c.read} records has any of ${DISTINCTIVE[kind].slice(0, 4).join(', ')}, … (another report kind?)`,
      );
    }
    if (Number(c.keys) < Number(c.good)) await store.run(st.dedupe);
  };
  const emptyChargebacks = async () => (await isEmpty(store, 'chargebacks')) && (await isEmpty(store, 'chargeback_status_log'));
  // A chargeback report loaded into an empty store goes straight into its table (firstLoadChargebacks).
  const firstLoad = staging !== undefined && kind === 'chargebacks' && (await emptyChargebacks());
  // Otherwise staging is read outside the transaction: it is a temp table (never part of the store), so a
  // failure or a kill there changes nothing, and the write transaction stays short.
  try {
    if (staging && !firstLoad) await stage(staging);
    return await store.transaction(async (s) => {
      // The store was empty when this load began; if another write came first, stage as usual.
      const direct = firstLoad && (await emptyChargebacks());
      if (firstLoad && !direct) await stage(staging!);
      if (direct) {
        let r: Awaited<ReturnType<typeof firstLoadChargebacks>>;
        try {
          r = await firstLoadChargebacks(s, staging!.select, landing, file, seen, sha256Pending);
        } catch (e) {
          throw failed(e);
        }
        rowsRead = r.read;
        quarantined = r.bad;
        rowsLoaded = r.keys;
      }
      const sha256 = await sha256Pending;
      if (reader) {
        // Rows no reader could take as rows: one quarantine row (and one row read) each.
        let rejected = format === 'csv' ? await csvRejects(s, kind, landing, file, sha256) : 0;
        if (reader.rejected > 0) {
          await quarantine(s, kind, `SELECT raw, reason FROM temp.${LONG_REJECTS}`, landing, sha256);
          rejected += reader.rejected;
        }
        rowsRead += rejected;
        quarantined += rejected;
      }
      if (!direct && !sizeZero) {
        await quarantine(s, kind, 'SELECT _raw AS raw, _why AS reason FROM _stg WHERE _why IS NOT NULL', landing, sha256);
        if (kind === 'chargebacks') await moveChargebacks(s, seen, landing);
        else if (kind === 'prevention') await movePrevention(s, seen, landing);
        else await moveMidStats(s, w!, seen, landing);
      }
      const winParams = [w?.start ?? null, w?.end ?? null];
      const [prior] = await s.all<{ n: string }>(
        `SELECT count(*) AS n FROM loads WHERE sha256 = $1 AND kind = $2 AND window_start IS NOT DISTINCT FROM $3::DATE AND window_end IS NOT DISTINCT FROM $4::DATE`,
        [sha256, kind, ...winParams],
      );
      const reloaded = Number(prior.n) > 0;
      if (reloaded) {
        await s.run(
          `UPDATE loads SET last_loaded_at = current_timestamp::TIMESTAMP, load_count = load_count + 1
           WHERE sha256 = $1 AND kind = $2 AND window_start IS NOT DISTINCT FROM $3::DATE AND window_end IS NOT DISTINCT FROM $4::DATE`,
          [sha256, kind, ...winParams],
        );
      } else {
        await s.run(
          `INSERT INTO loads VALUES ($1, $2, $3, $4::DATE, $5::DATE, $6::TIMESTAMP, $7, $8, $9, $10, current_timestamp::TIMESTAMP, current_timestamp::TIMESTAMP, 1)`,
          [landing, kind, format, ...winParams, seen, rowsRead, rowsLoaded, quarantined, sha256],
        );
      }
      await run.beforeCommit?.();
      return { file: landing, kind, format, window: w, seenAt: seen, sha256, rowsRead, rowsLoaded, quarantined, reloaded };
    });
  } finally {
    await store.run('DROP TABLE IF EXISTS _stg');
    await dropRejects(store);
    await reader?.dispose();
  }
}
