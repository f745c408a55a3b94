// Rows too long for DuckDB's readers to be trusted with, found and read by cbp itself.
//
// DuckDB's CSV reader reads a file in buffers (8 MiB in loadReport). A record longer than its buffer is not
// read reliably (DuckDB 1.5, checked here): up to two buffers long it is set aside as "LINE SIZE OVER
// MAXIMUM" (with no column, so it had no reason and the quarantine refused it); longer, it vanished without a
// trace; and when it held quoted line breaks, the reader started a later buffer inside the quoted value and
// read its lines as rows of their own — text inside one value became chargebacks. The same happens to a SHORT
// quoted value holding line breaks in a file bigger than one buffer: its parallel reader starts each 8 MiB
// buffer after the first at a line break, wherever it is, so one inside a quoted value that crosses a buffer's
// start makes the value's lines rows (or, for a value ending in a comma, refuses the file). Its JSON reader
// refuses the whole file when one record is past its maximum_object_size, at a size that depends on where the
// record lies.
//
// So before DuckDB reads a CSV file bigger than SAFE_CSV_RECORD, cbp finds its record boundaries itself (the
// same quoting rules as DuckDB's reader, one pass at memory speed, most of it jumping from line break to line
// break), and every record longer than that is taken out of what DuckDB reads and parsed here instead. A JSON
// file takes this path only when DuckDB refused it for a record's size (store/long-json.ts). Each long row
// either joins the read (its values, through a temp table) or is set aside with a reason: nothing is dropped,
// and no text inside a value is ever read as a row. The same scan tells whether any quoted value holds a line break: a file bigger
// than one buffer that has one is read by DuckDB's reader serially (parallel=false), which reads it exactly.
import { open, type FileHandle } from 'node:fs/promises';

/** The most text one report row may hold: the sum of its fields' lengths in bytes (16 MiB). */
export const ROW_LIMIT = 16 * 1024 * 1024;
/**
 * Records up to this many bytes are left to DuckDB's CSV reader (its 8 MiB buffers hold them whole; one with a
 * quoted line break is read safely only serially, see CsvScan.quotedBreak).
 */
export const SAFE_CSV_RECORD = 4 * 1024 * 1024;
/** Characters of an over-long value (or of a record set aside as written) kept in the quarantine. */
export const HEAD_CHARS = 1000;

export const CHUNK = 8 * 1024 * 1024;

/** Bytes [start, end) of one record in the file, without its line break. */
export interface Span {
  start: number;
  end: number;
}

export interface CsvScan {
  /** Records longer than the threshold, in file order (the header, if long, first). */
  long: Span[];
  /** Where the record starts whose quoted value is never closed (the file ends inside it). */
  unclosed?: number;
  /** Some quoted value holds a line break (LF or CR): DuckDB's parallel reader may read its lines as rows. */
  quotedBreak: boolean;
}

// States of DuckDB's CSV reader as far as record boundaries go: a quote opens a quoted value only at the
// start of a field or after exactly one space there (checked against DuckDB: `, "x"` is quoted, `,  "x"` and
// `,x"y` are text); inside one, `""` is a quote and any other `"` closes it; a line feed or a carriage return
// outside quotes ends the record.
const FIELD = 0;
const FIELD_SPACE = 1;
const TEXT = 2;
const QUOTED = 3;
const QUOTE_SEEN = 4;
/** A quote-free stretch longer than this is crossed by jumping between line breaks. */
const JUMP = 64 * 1024;

export async function readAt(fh: FileHandle, buf: Buffer, pos: number): Promise<Buffer> {
  const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
  return bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
}

interface ScanState {
  /** Offset of the chunk in the file. */
  base: number;
  st: number;
  /** Offset where the current record starts. */
  rec: number;
  threshold: number;
  long: Span[];
  /** A quoted value with a line break was seen. */
  quotedBreak: boolean;
}

/** The records of a CSV file longer than `threshold` bytes, and whether it ends inside a quoted value. */
export async function scanCsv(file: string, threshold: number): Promise<CsvScan> {
  const fh = await open(file, 'r');
  const s: ScanState = { base: 0, st: FIELD, rec: 0, threshold, long: [], quotedBreak: false };
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const b = await readAt(fh, buf, s.base);
      if (b.length === 0) break;
      scanChunk(b, s);
      s.base += b.length;
    }
  } finally {
    await fh.close();
  }
  if (s.st === QUOTED) return { long: s.long, unclosed: s.rec, quotedBreak: s.quotedBreak };
  if (s.base - s.rec > threshold) s.long.push({ start: s.rec, end: s.base });
  return { long: s.long, quotedBreak: s.quotedBreak };
}

/** Where the next byte `c` at or after `from` is, or the buffer's length when there is none. */
function nextByte(buf: Buffer, c: number, from: number): number {
  const t = buf.indexOf(c, from);
  return t < 0 ? buf.length : t;
}

// Synchronous and small, so V8 optimises the byte loop (inside the async function it ran slower).
function scanChunk(buf: Buffer, s: ScanState): void {
  // A plain Uint8Array view for the byte loop; Buffer's own methods for the searches.
  const b = new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
  const n = b.length;
  const { base, threshold } = s;
  let { st, rec } = s;
  let i = 0;
  let nq = -1; // the next quote at or after i (n: none in this chunk), valid while nq >= i
  let { quotedBreak } = s;
  let nlf = -1; // the next line feed at or after a quoted stretch's start (n: none), searched again once passed
  let ncr = -1; // the same for carriage returns
  for (;;) {
    // At a record start, up to the next quote every line break ends a record: only a gap between line breaks
    // wider than the threshold matters, so jump to the last line break within reach, again and again.
    if (st === FIELD && base + i === rec) {
      if (nq < i) {
        nq = buf.indexOf(34, i);
        if (nq < 0) nq = n;
      }
      if (nq - i > JUMP) {
        let at = i;
        for (;;) {
          const hi = Math.min(at + threshold, nq - 1);
          let t = buf.lastIndexOf(10, hi);
          if (t < at) t = buf.lastIndexOf(13, hi);
          if (t < at) break; // no line break within reach: the byte loop measures this record
          at = t + 1;
          if (nq - at <= JUMP) break;
        }
        i = at;
        rec = base + at;
      }
    }
    // A byte at a time (most values are short: a call per value costs more), until a record ends before a
    // long stretch without quotes.
    let jump = false;
    for (; i < n; i++) {
      if (st === QUOTED) {
        // Tight inner loops for the insides of values: a state check per byte costs more.
        const from = i;
        while (i < n && b[i] !== 34) i++;
        // A line break inside [from, i)? Found by searching from one line break to the next, not per byte.
        if (!quotedBreak && i > from) {
          if (nlf < from) nlf = nextByte(buf, 10, from);
          if (nlf < i) quotedBreak = true;
          else {
            if (ncr < from) ncr = nextByte(buf, 13, from);
            if (ncr < i) quotedBreak = true;
          }
        }
        if (i === n) break;
        st = QUOTE_SEEN;
        continue;
      }
      if (st === TEXT) {
        let t = b[i];
        while (t !== 44 && t !== 10 && t !== 13 && ++i < n) t = b[i];
        if (i === n) break;
      }
      const c = b[i];
      if (c === 10 || c === 13) {
        const end = base + i;
        if (end - rec > threshold) s.long.push({ start: rec, end });
        rec = end + 1;
        st = FIELD;
        if (nq <= i) {
          // A record that starts with a quote is common enough to spare the call.
          nq = b[i + 1] === 34 ? i + 1 : buf.indexOf(34, i + 1);
          if (nq < 0) nq = n;
        }
        if (nq - i > JUMP) {
          i++;
          jump = true;
          break;
        }
      } else if (c === 44) st = FIELD;
      else if (c === 34) {
        // In TEXT a quote is text; at a field's start (or after one space) it opens a quoted value; right after
        // a closing quote it is an escaped quote.
        if (st !== TEXT) st = QUOTED;
      } else if (c === 32 && st === FIELD) st = FIELD_SPACE;
      else st = TEXT;
    }
    if (!jump || i >= n) break;
  }
  s.st = st;
  s.rec = rec;
  s.quotedBreak = quotedBreak;
}

/** Line number (1-based; a line ends at LF, CRLF or a lone CR) of a byte offset, and the first characters from there. */
export async function lineAt(file: string, offset: number): Promise<{ line: number; text: string }> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let line = 1;
    for (let pos = 0; pos < offset; ) {
      const b = await readAt(fh, buf, pos);
      if (b.length === 0) break;
      const lim = Math.min(b.length, offset - pos);
      for (let i = b.indexOf(10); i >= 0 && i < lim; i = b.indexOf(10, i + 1)) line++;
      for (let i = b.indexOf(13); i >= 0 && i < lim; i = b.indexOf(13, i + 1)) if (b[i + 1] !== 10) line++;
      pos += b.length;
    }
    const head = await readAt(fh, Buffer.allocUnsafe(4 * HEAD_CHARS), offset);
    return { line, text: head.toString('utf8') };
  } finally {
    await fh.close();
  }
}

/** A long record, read by cbp: its values by raw column name, or why it cannot be a row. */
export type LongRow =
  | { ok: true; values: Record<string, string | null>; bytes: number; bigField: string | null; bigBytes: number }
  | { ok: false; raw: string; reason: string };

/** The first HEAD_CHARS characters, marked … when there is more. */
export function headOf(s: string): string {
  const cps = Array.from(s.slice(0, 2 * HEAD_CHARS + 2));
  return cps.length > HEAD_CHARS ? `${cps.slice(0, HEAD_CHARS).join('')}…` : cps.join('');
}
/** HEAD_CHARS + 1 code points: the typing SQL cuts a value longer than HEAD_CHARS of an over-long row and marks it. */
export const prefixOf = (s: string) => Array.from(s.slice(0, 2 * HEAD_CHARS + 4)).slice(0, HEAD_CHARS + 1).join('');

const SPACE = Buffer.from(' ');
const AFTER_QUOTE = 5;

/**
 * Parses one long CSV record, by the reader's rules, into the fields the load reads: `columns[i]` is the raw
 * column name of the header's field i, or undefined for a column the report kind does not have. A value is
 * kept whole while the row's text stays within ROW_LIMIT; past it only the first characters of each value are
 * kept (the typing SQL quarantines the row, seeing `bytes`). As DuckDB's reader does, a record whose field
 * count differs from the header's, that is not UTF-8, or that has text after a closing quote is no row: it is
 * returned with the reason the reader would have given.
 */
export async function parseCsvRecord(file: string, span: Span, columns: readonly (string | undefined)[]): Promise<LongRow> {
  const fh = await open(file, 'r');
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const keepCap = 4 * (HEAD_CHARS + 1);
  const parts: Buffer[][] = columns.map(() => []);
  const kept: number[] = columns.map(() => 0);
  const sizes: number[] = columns.map(() => 0);
  let head = Buffer.alloc(0);
  let total = 0;
  let over = false;
  let validUtf8 = true;
  let textAfterQuote = false;
  let field = 0;
  let st = FIELD;
  const add = (bytes: Buffer) => {
    if (bytes.length === 0 || field >= columns.length || columns[field] === undefined) return;
    sizes[field] += bytes.length;
    total += bytes.length;
    if (!over && total > ROW_LIMIT) {
      over = true;
      for (let k = 0; k < parts.length; k++) {
        const whole = Buffer.concat(parts[k]);
        parts[k] = [whole.subarray(0, keepCap)];
        kept[k] = Math.min(whole.length, keepCap);
      }
    }
    const room = over ? keepCap - kept[field] : bytes.length;
    if (room <= 0) return;
    // Copied: the read buffer is reused for the next chunk.
    parts[field].push(Buffer.from(bytes.subarray(0, room)));
    kept[field] += Math.min(room, bytes.length);
  };
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let pos = span.start; pos < span.end; ) {
      const full = await readAt(fh, buf, pos);
      if (full.length === 0) break;
      const b = full.subarray(0, Math.min(full.length, span.end - pos));
      pos += b.length;
      if (head.length < keepCap) head = Buffer.concat([head, b.subarray(0, keepCap - head.length)]);
      if (validUtf8) {
        try {
          utf8.decode(b, { stream: pos < span.end });
        } catch {
          validUtf8 = false;
        }
      }
      let i = 0;
      let from = 0; // first byte of the current value not yet added
      while (i < b.length) {
        if (st === QUOTED) {
          const q = b.indexOf(34, i);
          if (q < 0) break;
          add(b.subarray(from, q));
          i = q + 1;
          st = QUOTE_SEEN;
          continue;
        }
        const c = b[i];
        if (st === QUOTE_SEEN && c === 34) {
          // "" inside a quoted value: the second quote is text, and the value goes on
          from = i;
          st = QUOTED;
          i++;
          continue;
        }
        if (c === 44) {
          if (st === TEXT) add(b.subarray(from, i));
          else if (st === FIELD_SPACE) add(SPACE);
          field++;
          st = FIELD;
        } else if (st === FIELD) {
          if (c === 34) st = QUOTED, (from = i + 1);
          else if (c === 32) st = FIELD_SPACE;
          else st = TEXT, (from = i);
        } else if (st === FIELD_SPACE) {
          if (c === 34) st = QUOTED, (from = i + 1);
          else add(SPACE), (st = TEXT), (from = i);
        } else if (st === QUOTE_SEEN || st === AFTER_QUOTE) {
          // After a closing quote only spaces may come before the next comma.
          if (c === 32) st = AFTER_QUOTE;
          else textAfterQuote = true, (st = AFTER_QUOTE);
        }
        i++;
      }
      if (st === QUOTED || st === TEXT) add(b.subarray(from, b.length));
      // A value split across chunks goes on from the next chunk's first byte.
    }
  } finally {
    await fh.close();
  }
  if (st === FIELD_SPACE) add(SPACE);
  const found = field + 1;
  const line = () => JSON.stringify({ csv_line: headOf(new TextDecoder('utf-8').decode(head)) });
  if (!validUtf8) {
    return { ok: false, raw: line(), reason: 'row: Invalid unicode (byte sequence mismatch) detected. This file is not utf-8 encoded. (invalid encoding)' };
  }
  if (found !== columns.length) {
    const kind = found > columns.length ? 'too many columns' : 'missing columns';
    return { ok: false, raw: line(), reason: `row: Expected Number of Columns: ${columns.length} Found: ${found} (${kind})` };
  }
  if (textAfterQuote || st === QUOTED) {
    return { ok: false, raw: line(), reason: 'row: Value with unterminated quote found. (unquoted value)' };
  }
  const values: Record<string, string | null> = {};
  let bigField: string | null = null;
  let bigBytes = 0;
  columns.forEach((name, k) => {
    if (name === undefined || name in values) return;
    const bytes = Buffer.concat(parts[k]);
    values[name] = sizes[k] === 0 ? null : over ? prefixOf(new TextDecoder('utf-8').decode(bytes)) : bytes.toString('utf8');
    if (sizes[k] > bigBytes) (bigBytes = sizes[k]), (bigField = name);
  });
  return { ok: true, values, bytes: total, bigField, bigBytes };
}

/** Copies `src` to `dest` without the byte ranges `cuts` (sorted, not overlapping). */
export async function copyWithout(src: string, dest: string, cuts: readonly Span[]): Promise<void> {
  const inp = await open(src, 'r');
  const out = await open(dest, 'wx', 0o600);
  try {
    const size = (await inp.stat()).size;
    const buf = Buffer.allocUnsafe(CHUNK);
    const keep: Span[] = [];
    let at = 0;
    for (const c of cuts) {
      if (c.start > at) keep.push({ start: at, end: c.start });
      at = Math.max(at, c.end);
    }
    if (at < size) keep.push({ start: at, end: size });
    for (const k of keep) {
      for (let pos = k.start; pos < k.end; ) {
        const { bytesRead } = await inp.read(buf, 0, Math.min(buf.length, k.end - pos), pos);
        if (bytesRead === 0) break;
        await out.write(buf, 0, bytesRead);
        pos += bytesRead;
      }
    }
  } finally {
    await inp.close();
    await out.close();
  }
}
