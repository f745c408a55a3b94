// Reading the merchant's order file in batches: NDJSON (one order per line) or CSV (a header row, one order
// per record). Each record is validated with MerchantOrderSchema; a record that fails is reported with the
// file's own line number (where the record starts: blank lines, the CSV header and line breaks inside quoted
// CSV cells all count) and every field at fault, and is not pushed. Blank lines (and CSV records whose every
// cell is blank) are not records; every other line or record is counted, valid or not.
//
// Cursors are opaque to the workflow, deterministic and small: `n:<byte offset>:<lines before it>` (NDJSON)
// or `c:<byte offset>:<lines before it>` (CSV). A batch reads from the offset (always a record boundary), so
// a big file is read once overall; a CSV batch after the first re-reads only the header.
import { createReadStream, existsSync, openSync, readSync, closeSync } from 'node:fs';
import { parse, type Options as CsvOptions } from 'csv-parse';
import { MerchantOrderSchema, type MerchantOrder } from '../contract/orders.ts';
import { safeParseWith } from '../contract/issues.ts';
import { CbpError, NotFoundError, UsageError } from '../lib/errors.ts';

export type OrderFileFormat = 'ndjson' | 'csv';

/** A line (or CSV record) of an order file that failed validation; not pushed. */
export interface InvalidOrderLine {
  /** The file's own 1-based line number where the record starts. */
  line: number;
  order_id?: string;
  message: string;
}

/** A valid order and the line where its record starts. */
export interface OrderRecord {
  line: number;
  order: MerchantOrder;
}

export interface OrderBatch {
  /** Validated orders (MerchantOrderSchema output), in file order. */
  orders: OrderRecord[];
  invalid: InvalidOrderLine[];
  /** Records read (orders + invalid). */
  records: number;
  /** The lines this batch covered: from the line after the cursor to the line before the next cursor (null: to the end of the file). */
  firstLine: number;
  lastLine: number | null;
  /** Cursor of the next batch; null at the end of the file. */
  next: string | null;
}

/** The order file cannot be read as a whole (an unclosed CSV quote, a header without order_id, ...). Not retried. */
export class OrderFileError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_ORDER_FILE', message);
  }
}

/** By extension (.ndjson, .jsonl, .json → NDJSON; .csv → CSV), else by the first non-blank character. */
export function orderFileFormat(file: string): OrderFileFormat {
  if (/\.(nd)?jsonl?$|\.ndjson$|\.json$/i.test(file)) return 'ndjson';
  if (/\.csv$/i.test(file)) return 'csv';
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(512);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').replace(/^\uFEFF/, '').trimStart()[0];
    return first === '{' ? 'ndjson' : 'csv';
  } finally {
    closeSync(fd);
  }
}

function validate(input: unknown, line: number): { order?: MerchantOrder; invalid?: InvalidOrderLine } {
  const r = safeParseWith(MerchantOrderSchema, input);
  if (r.ok) return { order: r.value as MerchantOrder };
  const id = typeof input === 'object' && input !== null ? (input as Record<string, unknown>).order_id : undefined;
  return { invalid: { line, ...(typeof id === 'string' && id ? { order_id: id } : {}), message: r.issues.join('; ') } };
}

function parseCursor(cursor: string | undefined, kind: 'n' | 'c'): { offset: number; lines: number } {
  if (cursor === undefined) return { offset: 0, lines: 0 };
  const m = new RegExp(`^${kind}:(\\d+):(\\d+)$`).exec(cursor);
  if (!m) throw new UsageError(`order file cursor ${JSON.stringify(cursor)} is not one this reader gave out for a ${kind === 'n' ? 'NDJSON' : 'CSV'} file`);
  return { offset: Number(m[1]), lines: Number(m[2]) };
}

async function readNdjson(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  const at = parseCursor(cursor, 'n');
  let lineNo = at.lines;
  const out: OrderBatch = { orders: [], invalid: [], records: 0, firstLine: at.lines + 1, lastLine: null, next: null };
  let pos = at.offset;
  let rest = Buffer.alloc(0);
  const take = (raw: Buffer) => {
    lineNo++;
    const text = raw.toString('utf8').replace(/^\uFEFF/, '').trim();
    if (text === '') return;
    out.records++;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      out.invalid.push({ line: lineNo, message: `not valid JSON: ${(e as Error).message.split('\n')[0]}` });
      return;
    }
    const v = validate(value, lineNo);
    if (v.order) out.orders.push({ line: lineNo, order: v.order });
    else if (v.invalid) out.invalid.push(v.invalid);
  };
  // Stops before a non-blank line once the batch is full: the next batch starts there.
  const full = (raw: Buffer) => out.records >= batchSize && raw.toString('utf8').trim() !== '';
  const stream = createReadStream(file, { start: at.offset, highWaterMark: 256 * 1024 });
  try {
    for await (const chunk of stream) {
      let buf = rest.length ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
      let nl: number;
      while ((nl = buf.indexOf(0x0a)) !== -1) {
        const raw = buf.subarray(0, nl);
        if (full(raw)) {
          out.next = `n:${pos}:${lineNo}`;
          out.lastLine = lineNo;
          return out;
        }
        take(raw);
        pos += nl + 1;
        buf = buf.subarray(nl + 1);
      }
      rest = Buffer.from(buf);
    }
  } finally {
    stream.destroy();
  }
  if (rest.length) {
    if (full(rest)) {
      out.next = `n:${pos}:${lineNo}`;
      out.lastLine = lineNo;
      return out;
    }
    take(rest);
  }
  return out;
}

/** A CSV cell: empty means "not given"; a cell holding a JSON array or object (fulfillment, products, notes) is parsed. */
function cell(v: string): unknown {
  const t = v.trim();
  if (t === '') return undefined;
  if ((t.startsWith('[') && t.endsWith(']')) || (t.startsWith('{') && t.endsWith('}'))) {
    try {
      return JSON.parse(t);
    } catch {
      return v;
    }
  }
  return v;
}

const CSV_OPTIONS: CsvOptions = {
  bom: true,
  skip_empty_lines: true,
  relax_column_count: true,
  info: true,
  // Both line ends at once: a file that mixes them still splits the same way from any offset.
  record_delimiter: ['\r\n', '\n'],
};

type CsvRow = { record: string[]; info: { bytes: number } };

/**
 * Counts line breaks in the bytes the parser consumed, so each record's starting line is known exactly (csv-parse's
 * own `lines` miscounts CRLF inside quotes). Offsets asked for only grow; chunks behind them are dropped.
 */
function lineTracker(startLines: number) {
  const chunks: Buffer[] = [];
  let base = 0; // offset of chunks[0]
  let pos = 0; // offset counted up to
  let lines = startLines; // line breaks before pos
  const byteAt = (off: number): number | undefined => {
    let o = off - base;
    for (const c of chunks) {
      if (o < c.length) return c[o];
      o -= c.length;
    }
    return undefined;
  };
  const drop = () => {
    while (chunks.length && base + chunks[0]!.length <= pos) {
      base += chunks[0]!.length;
      chunks.shift();
    }
  };
  const advance = (to: number) => {
    let off = base;
    for (const c of chunks) {
      const start = off;
      off += c.length;
      if (off <= pos) continue;
      if (start >= to) break;
      const end = Math.min(to, off) - start;
      for (let i = c.indexOf(0x0a, Math.max(pos, start) - start); i !== -1 && i < end; i = c.indexOf(0x0a, i + 1)) lines++;
    }
    pos = Math.max(pos, Math.min(to, off));
    drop();
  };
  return {
    push(c: Buffer) {
      chunks.push(c);
    },
    /** Line number (1-based) of the first byte at or after `from` that is not a line end (blank lines skipped by the parser). */
    startLine(from: number, to: number): number {
      advance(from);
      let p = pos;
      for (let b = byteAt(p); p < to && (b === 0x0a || b === 0x0d); b = byteAt(++p)) if (b === 0x0a) lines++;
      pos = p;
      drop();
      return lines + 1;
    },
    advance,
    get lines() {
      return lines;
    },
  };
}

/** The header, read from the file's start: trimmed names and where the first data record starts. */
async function readCsvHeader(file: string): Promise<{ columns: string[]; end: number; lines: number }> {
  const input = createReadStream(file, { highWaterMark: 64 * 1024 });
  const tracker = lineTracker(0);
  input.on('data', (c) => tracker.push(c as Buffer));
  const parser = input.pipe(parse({ ...CSV_OPTIONS, to: 1 }));
  try {
    for await (const row of parser as AsyncIterable<CsvRow>) {
      const columns = row.record.map((c) => c.trim());
      tracker.advance(row.info.bytes);
      return { columns, end: row.info.bytes, lines: tracker.lines };
    }
  } catch (e) {
    throw new OrderFileError(`${file} could not be read as CSV orders: the header row is broken (${(e as Error).message}); fix the first line`);
  } finally {
    parser.destroy();
    input.destroy();
  }
  return { columns: [], end: 0, lines: 0 };
}

function checkHeader(file: string, columns: string[]): void {
  if (columns.length === 0) throw new OrderFileError(`${file} is empty: a CSV order file starts with a header row naming the fields (order_id, order_date, order_total, ...)`);
  if (!columns.includes('order_id')) {
    throw new OrderFileError(
      `${file}: the CSV header (line 1) has no order_id column; the first row must name the fields, e.g. order_id,order_date,order_total,currency (see docs/orders.md)`,
    );
  }
  const seen = new Set<string>();
  for (const c of columns) {
    if (c !== '' && seen.has(c)) throw new OrderFileError(`${file}: the CSV header (line 1) names ${JSON.stringify(c)} twice; each field may have one column`);
    seen.add(c);
  }
}

async function readCsv(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  const header = await readCsvHeader(file);
  checkHeader(file, header.columns);
  const at = cursor === undefined ? { offset: header.end, lines: header.lines } : parseCursor(cursor, 'c');
  const out: OrderBatch = { orders: [], invalid: [], records: 0, firstLine: at.lines + 1, lastLine: null, next: null };
  const input = createReadStream(file, { start: at.offset, highWaterMark: 256 * 1024 });
  const tracker = lineTracker(at.lines);
  let consumed = 0; // bytes after at.offset up to the end of the last record taken
  input.on('data', (c) => tracker.push(c as Buffer));
  const parser = input.pipe(parse({ ...CSV_OPTIONS, bom: at.offset === 0 }));
  // Offsets below are relative to at.offset; the tracker works on the same scale.
  try {
    for await (const row of parser as AsyncIterable<CsvRow>) {
      if (row.record.every((c) => c.trim() === '')) {
        consumed = row.info.bytes; // a blank record (cells of spaces only) is a blank line
        continue;
      }
      if (out.records >= batchSize) {
        tracker.advance(consumed);
        out.next = `c:${at.offset + consumed}:${tracker.lines}`;
        break;
      }
      const line = tracker.startLine(consumed, row.info.bytes);
      out.records++;
      if (row.record.length > header.columns.length) {
        out.invalid.push({
          line,
          message: `has ${row.record.length} values but the header has ${header.columns.length} columns: quote a value that holds a comma ("a,b"), or add the column to the header`,
        });
      } else {
        const obj: Record<string, unknown> = {};
        row.record.forEach((v, i) => {
          const k = header.columns[i]!;
          const c = cell(String(v ?? ''));
          if (c !== undefined && k !== '') obj[k] = c;
        });
        const v = validate(obj, line);
        if (v.order) out.orders.push({ line, order: v.order });
        else if (v.invalid) out.invalid.push(v.invalid);
      }
      consumed = row.info.bytes;
    }
  } catch (e) {
    const err = e as Error & { lines?: number; code?: string };
    tracker.advance(consumed);
    const near = tracker.lines + 1;
    throw new OrderFileError(
      `${file} could not be read as CSV orders from line ${near}: ${err.message}` +
        (err.code === 'CSV_QUOTE_NOT_CLOSED' ? ' (a quote opened there is never closed: close it, or double a quote inside a quoted value as "")' : ''),
    );
  } finally {
    parser.destroy();
    input.destroy();
  }
  if (out.next !== null) out.lastLine = tracker.lines;
  return out;
}

/** One batch of at most `batchSize` records from `file`, starting at `cursor`. */
export async function readOrderBatch(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  if (!existsSync(file)) throw new NotFoundError(`order file ${file} does not exist`);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new UsageError(`batchSize must be a whole number of at least 1, got ${batchSize}`);
  return orderFileFormat(file) === 'csv' ? readCsv(file, cursor, batchSize) : readNdjson(file, cursor, batchSize);
}
