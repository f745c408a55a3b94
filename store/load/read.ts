// Reading a report file: checks of what the file is (format, encoding, shape, readable), its CSV header, and the
// SELECT through which DuckDB's own readers (read_json, read_csv) give its rows as raw text columns, with the
// rows too long for them read by cbp (store/long-rows.ts). The rows a reader could not take as rows wait in
// temp tables until the load's transaction moves them to the quarantine (Reader.quarantineRejects).
import { DEFAULT_STORE_MEMORY } from '../../lib/size.ts';
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import type { ReportKind } from '../../contract/reporting.ts';
import { NotFoundError, type CbpError } from '../../lib/errors.ts';
import type { Store } from '../db.ts';
import { BadReportFileError, StoreUnavailableError } from '../errors.ts';
import {
  ROW_LIMIT, SAFE_CSV_RECORD, copyWithout, lineAt, parseCsvRecord, parseJsonRecord, scanCsv, scanJsonArray, type LongRow, type Span,
} from '../long-rows.ts';
import type { FileFormat } from '../load.ts';
import { CSV_IDENTITY, RAW_COLUMNS, REQUIRED } from './columns.ts';
import { quarantine } from './merge.ts';
import { claimLoadCopy, removeStaleLoadCopies } from './temp.ts';
import { ident, q } from './typing.ts';

export function inferFormat(file: string): FileFormat | undefined {
  const ext = path.extname(file).toLowerCase();
  return ext === '.json' ? 'json' : ext === '.csv' ? 'csv' : undefined;
}

/** An empty 200 from the service (no bytes, or whitespace only) means "no data": nothing to load. */
export function isBlank(file: string): boolean {
  const size = statSync(file).size;
  if (size > 4096) return false;
  return readFileSync(file, 'utf8').replace(/^\uFEFF/, '').trim() === '';
}

/**
 * A file in UTF-16 (as some spreadsheet tools save "Unicode text") would read as a header or a first record
 * of garbage: refused up front, saying what to do.
 */
export function checkNotUtf16(file: string, shown: string): void {
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
    // A file cut short (an interrupted download or copy) would load the records before the cut as if they were all.
    const size = fstatSync(fd).size;
    const tail = Buffer.alloc(Math.min(size, 65536));
    readSync(fd, tail, 0, tail.length, size - tail.length);
    const end = tail.toString('latin1').trimEnd();
    if (!end.endsWith(']')) {
      throw new BadReportFileError(
        `${shown} ends before its JSON array closes (it ends with ${JSON.stringify(end.slice(-20))}): the file was cut short, so nothing was loaded. Fetch or export it again, whole, and load it again.`,
      );
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * A file that is not UTF-8 throughout (Windows-1252, Latin-1: a spreadsheet's "CSV" on some systems) would load its
 * names and descriptions garbled, or lose the rows they are in: refused, naming the first line that is not.
 */
export async function checkUtf8(file: string, shown: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let carry = 0;
    let offset = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, carry, buf.length - carry, null);
      const n = carry + bytesRead;
      if (n === 0) return;
      // Up to the last whole character: a character cut by the buffer's end is read with the next bytes.
      let cut = n;
      if (bytesRead > 0) {
        let k = n - 1;
        while (k > n - 4 && k > 0 && (buf[k] & 0xc0) === 0x80) k--;
        const lead = buf[k];
        const len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (k + len > n) cut = k;
      }
      if (!isUtf8(buf.subarray(0, cut))) {
        const at = offset + badByte(buf.subarray(0, cut));
        throw new BadReportFileError(
          `${shown} is not UTF-8 text (line ${await lineOf(file, at)} holds a byte that is not): cbp reads UTF-8. Save or export it as UTF-8 (in a spreadsheet: "CSV UTF-8") and load it again.`,
        );
      }
      if (bytesRead === 0) return;
      buf.copy(buf, 0, cut, n);
      carry = n - cut;
      offset += cut;
    }
  } finally {
    await fh.close();
  }
}

/** The offset of the first byte of b that starts no valid UTF-8 character (only on the way to an error). */
function badByte(b: Buffer): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i];
    const len = c < 0x80 ? 1 : (c & 0xe0) === 0xc0 ? 2 : (c & 0xf0) === 0xe0 ? 3 : (c & 0xf8) === 0xf0 ? 4 : 0;
    if (len === 0 || !isUtf8(b.subarray(i, i + len))) return i;
    i += len;
  }
  return b.length;
}

/** The line (from 1) the byte at `offset` is on. */
async function lineOf(file: string, offset: number): Promise<number> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(Math.min(offset, 1 << 20));
    let line = 1;
    for (let at = 0; at < offset; ) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, offset - at), at);
      if (bytesRead === 0) break;
      for (let i = 0; i < bytesRead; i++) if (buf[i] === 0x0a) line++;
      at += bytesRead;
    }
    return line;
  } finally {
    await fh.close();
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
      await store.run(`DROP TABLE IF EXISTS temp.${LONG_ROWS}; DROP TABLE IF EXISTS temp.${LONG_REJECTS}`);
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
      const missing = REQUIRED[kind].filter((c) => !byName.has(c));
      if (missing.length) {
        throw new BadReportFileError(
          `${shown} lacks ${missing.length === 1 ? 'a column' : 'columns'} every ${kind} row needs: ${missing.join(', ')}. Nothing was loaded: export the report again with ${missing.length === 1 ? 'it' : 'them'}, and load it again.`,
        );
      }
      // Records longer than DuckDB's reader takes for certain are found first (a few tens of milliseconds for
      // a 1M-row file) and read by cbp; a file that ends inside a quoted value is refused here.
      let src = file;
      // DuckDB's parallel reader starts each buffer after the first at a line break, even one inside a quoted
      // value: the value's lines became rows (or a never-closed quote). A file bigger than one buffer with a
      // quoted line break is read serially, which reads it exactly at much the same speed; one buffer is always
      // read serially (checked at 6, 9 and 30 MiB); a file with none keeps the parallel read.
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
      const csv = `read_csv(${q(src)}, ${dialect}, buffer_size=${CSV_BUFFER},${serial ? ' parallel=false,' : ''} auto_detect=false, columns={${columns.map((c) => `${q(c)}: 'VARCHAR'`).join(', ')}})`;
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
    await dispose();
    throw e;
  }
}


/** A record DuckDB's JSON reader refused for its size: the load is tried again with cbp reading the long records. */
export class RecordTooBigError extends BadReportFileError {}

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
      `the store ran out of memory reading ${c.shown}: raise CBP_STORE_MEMORY_LIMIT (default ${DEFAULT_STORE_MEMORY}), or load it again when other work on this machine is done.`,
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

