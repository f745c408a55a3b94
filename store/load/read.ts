// Reading a report file through DuckDB: the SELECT through which its own readers (read_json, read_csv) give the rows
// as raw text columns, with the rows too long for them read by cbp (store/long-rows.ts). The rows a reader could not
// take as rows wait in temp tables until the load's transaction moves them to the quarantine (Reader.quarantineRejects).
// What the file is before it is read, and the words for a file that cannot be: ./file-checks.ts.
import { statSync } from 'node:fs';
import path from 'node:path';
import type { ReportKind } from '../../contract/reporting.ts';
import type { Store } from '../db.ts';
import { BadReportFileError } from '../errors.ts';
import { ROW_LIMIT, SAFE_CSV_RECORD, copyWithout, lineAt, parseCsvRecord, scanCsv, type LongRow, type Span } from '../long-rows.ts';
import { parseJsonRecord, scanJsonArray } from '../long-json.ts';
import type { FileFormat } from '../load.ts';
import { CSV_IDENTITY, RAW_COLUMNS, REQUIRED } from './columns.ts';
import { checkJsonShape, csvHeader, readFailure } from './file-checks.ts';
import { quarantine } from './merge.ts';
import { mibText } from '../../lib/size.ts';
import { claimLoadCopy, removeStaleLoadCopies } from './temp.ts';
import { ident } from './typing.ts';
import { dropTemp, sqlText } from '../sql-text.ts';

const unclosedQuote = (shown: string, line: string | number, text: string) =>
  new BadReportFileError(
    `${shown} has a quoted value that is never closed, on CSV line ${line} (${JSON.stringify(text.slice(0, 60))}…): the rows after it cannot be told apart, so nothing was loaded. Close the quote (a " inside a quoted value is written "") and load the file again.`,
  );

const REJECTS = '_csv_rejects';
const REJECT_SCANS = '_csv_reject_scans';
const dropRejects = (s: Store) => s.run(dropTemp('TABLE', REJECTS, REJECT_SCANS));

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
export interface Reader {
  sql: string;
  /** The files DuckDB is given: in a message, each is the file as the user named it. */
  paths: string[];
  /**
   * After the read, inside the load's transaction: moves the records no reader could take as rows (the CSV
   * reader's rejects, the long records cbp found to be no row) to the quarantine, one quarantine row (and one
   * row read) each, and returns how many. A CSV file with a quoted value never closed is refused here.
   */
  quarantineRejects(s: Store, kind: ReportKind, file: string, sha256: string): Promise<number>;
  /** Drops the reader's temp tables and files. */
  dispose(): Promise<void>;
}

const LONG_ROWS = '_long_rows';
const LONG_REJECTS = '_long_rejects';
/** DuckDB's CSV read buffer (its default is 32 MiB): see the read below. */
const CSV_BUFFER = 8 << 20;
/** In the slow path for JSON, records longer than this are parsed by cbp (DuckDB's reader takes 16 MiB for certain). */
const SAFE_JSON_RECORD = 8 * 1024 * 1024;

export async function readerSql(store: Store, file: string, shown: string, kind: ReportKind, format: FileFormat, longJson: boolean): Promise<Reader> {
  const cols = RAW_COLUMNS[kind];
  const paths = [file];
  let temp: { copy: string; release: () => void } | undefined;
  const dispose = async () => {
    try {
      await store.run(dropTemp('TABLE', LONG_ROWS, LONG_REJECTS));
      await dropRejects(store);
    } finally {
      temp?.release();
    }
  };
  // The copies killed loads left beside this file (store/load/temp.ts): a full report each.
  removeStaleLoadCopies(path.dirname(file));
  // The file without some byte ranges: a copy (0600) beside it, on the data's disk, under an OS lock while
  // the load runs, removed by dispose (or, if the load is killed, by the next load).
  const without = async (cuts: readonly Span[]) => {
    temp = claimLoadCopy(file);
    paths.push(temp.copy);
    try {
      await copyWithout(file, temp.copy, cuts);
    } catch (e) {
      throw readFailure(e, { shown, paths, format, kind });
    }
    return temp.copy;
  };
  const long: LongRow[] = [];
  try {
    await dropRejects(store);
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
      const spec = cols.map((c) => `${sqlText(c)}: 'VARCHAR'`).join(', ');
      // Only a file bigger than ROW_LIMIT can hold a row over it: elsewhere the sum is not even computed.
      const bytes = statSync(file).size > ROW_LIMIT ? cols.map((c) => `coalesce(strlen(${ident(c)}), 0)`).join(' + ') : 'NULL::BIGINT';
      sql = `SELECT *, ${bytes} AS _bytes, NULL::VARCHAR AS _big_field, NULL::BIGINT AS _big_bytes FROM read_json(${sqlText(src)}, format='array', columns={${spec}})`;
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
          const sniff = `read_csv(${sqlText(file)}, header=true, delim=',', quote='"', escape='"', all_varchar=true, ignore_errors=true)`;
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
      const missing = REQUIRED[kind].filter((c) => !byName.has(c));
      if (missing.length) {
        throw new BadReportFileError(
          `${shown} lacks ${missing.length === 1 ? 'a column' : 'columns'} every ${kind} row needs: ${missing.join(', ')}. Nothing was loaded: export the report again with ${missing.length === 1 ? 'it' : 'them'}, and load it again.`,
        );
      }
      // Records longer than DuckDB's reader takes for certain are found first (a quick scan) and read by cbp;
      // a file that ends inside a quoted value is refused here.
      let src = file;
      // DuckDB's parallel reader starts each buffer after the first at a line break, even one inside a quoted
      // value: the value's lines became rows (or a never-closed quote). A file bigger than one buffer with a
      // quoted line break is read serially, which reads it exactly at much the same speed; one buffer is always
      // read serially; a file with none keeps the parallel read.
      let serial = false;
      const size = statSync(file).size;
      if (size > SAFE_CSV_RECORD) {
        const scan = await scanCsv(file, SAFE_CSV_RECORD);
        serial = scan.quotedBreak && size > CSV_BUFFER;
        if (scan.unclosed !== undefined) {
          const at = await lineAt(file, scan.unclosed);
          throw unclosedQuote(shown, at.line, at.text);
        }
        if (scan.long.length > 0) {
          const header = scan.long[0].start === 0 ? scan.long[0] : undefined;
          if (header) {
            throw new BadReportFileError(
              `${shown} is not a CSV report: its first line, which should be the header naming the columns, is ${mibText(header.end - header.start)} long.`,
            );
          }
          const byPos = columns.map((c) => cols.find((raw) => byName.get(raw) === c));
          for (const span of scan.long) long.push(await parseCsvRecord(file, span, byPos));
          src = await without(scan.long);
        }
      }
      // Columns named by position, all text: no sniffing, and the header's own spelling cannot clash with SQL.
      // 8 MiB read buffers instead of DuckDB's 32 MiB: the process's peak memory is lower at the same speed (no
      // record longer than SAFE_CSV_RECORD reaches the reader).
      const csv = `read_csv(${sqlText(src)}, ${dialect}, buffer_size=${CSV_BUFFER},${serial ? ' parallel=false,' : ''} auto_detect=false, columns={${columns.map((c) => `${sqlText(c)}: 'VARCHAR'`).join(', ')}})`;
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
    const quarantineRejects = async (s: Store, k: ReportKind, landing: string, sha256: string) => {
      let n = format === 'csv' ? await csvRejects(s, k, landing, shown, sha256) : 0;
      if (rejects.length > 0) {
        await quarantine(s, k, `SELECT raw, reason FROM temp.${LONG_REJECTS}`, landing, sha256);
        n += rejects.length;
      }
      return n;
    };
    return { sql, paths, quarantineRejects, dispose };
  } catch (e) {
    // (a lake's load is one transaction, which the failure may have aborted: the failure is what counts)
    await dispose().catch(() => undefined);
    throw e;
  }
}
