// What a report file is, before DuckDB reads it: its format, blank or not, its encoding (UTF-8 throughout, not UTF-16),
// a JSON report's shape (an array of objects that closes), its CSV header, whether it can be opened; and the words
// for a file that cannot be read (readFailure), the path as the user gave it.
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import type { ReportKind } from '../../contract/reporting.ts';
import { DEFAULT_STORE_MEMORY, mibText } from '../../lib/size.ts';
import { NotFoundError, type CbpError } from '../../lib/errors.ts';
import { BadReportFileError, StoreUnavailableError } from '../errors.ts';
import type { FileFormat } from '../load.ts';

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
export function checkJsonShape(file: string, shown: string): void {
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
      `${c.shown} holds a JSON record ${size ? `of more than ${mibText(Number(size))} ` : ''}that DuckDB's reader cannot take, and cbp could not set it apart either. Split the report into smaller files (a shorter window) and load them.`,
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
