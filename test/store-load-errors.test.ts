// A report file that cannot be read says so in the user's words — what happened, what to do, the file as they
// named it — never as DuckDB's (or Node's) own message alone.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport, readFailure } from '../store/load.ts';
import { BadReportFileError, StoreUnavailableError } from '../store/errors.ts';
import { NotFoundError } from '../lib/errors.ts';
import { ROOT, tmpDir } from './store-fixtures.ts';
import { runCbp } from './helpers/cbp-cli.ts';

const SEEN = '2024-03-05T00:00:00Z';

/** Loads `content` as `name`, giving loadReport the path relative to the working folder, as a user types it. */
async function failure(name: string, content: string | Buffer | null): Promise<{ err: Error; typed: string }> {
  const dir = tmpDir();
  const abs = path.join(dir, name);
  if (content === null) mkdirSync(abs);
  else writeFileSync(abs, content);
  const typed = path.relative(process.cwd(), abs);
  const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  try {
    const err = await loadReport(store, typed, { kind: 'chargebacks', seenAt: SEEN }).then(
      () => new Error('loaded'),
      (e: Error) => e,
    );
    return { err, typed };
  } finally {
    store.close();
  }
}

describe('a report file that cannot be read', () => {
  it('says where JSON is broken, and that a file not in UTF-8 must be saved as UTF-8, naming the file as given', async () => {
    const broken = await failure('cb.json', '[{"case_number":"1"},{"case_number":}]');
    expect(broken.err).toBeInstanceOf(BadReportFileError);
    expect(broken.err.message).toBe(`${broken.typed} is not valid JSON: unexpected character (byte 16, record 3). Repair or fetch the file again, and load it again.`);
    const cut = await failure('cb.json', '[{"case_number":"1"},{"case_number":');
    expect(cut.err.message).toBe(`${cut.typed} ends before its JSON array closes (it ends with "\\"1\\"},{\\"case_number\\":"): the file was cut short, so nothing was loaded. Fetch or export it again, whole, and load it again.`);
    const latin1 = await failure('cb.json', Buffer.concat([Buffer.from('[{"case_number":"1",\n"reason":"'), Buffer.from([0xe9]), Buffer.from('"}]')]));
    expect(latin1.err).toBeInstanceOf(BadReportFileError);
    expect(latin1.err.message).toBe(`${latin1.typed} is not UTF-8 text (line 2 holds a byte that is not): cbp reads UTF-8. Save or export it as UTF-8 (in a spreadsheet: "CSV UTF-8") and load it again.`);
    for (const f of [broken, cut, latin1]) expect(f.err.message).not.toMatch(/Invalid Input Error|Malformed JSON in file/);
  });

  it('says a file in UTF-16 must be saved as UTF-8, with or without a byte order mark', async () => {
    const text = 'case_number,mid,status,amount\nCB-1,MID-1,New,1\n';
    for (const content of [Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]), Buffer.from(text, 'utf16le')]) {
      const f = await failure('cb.csv', content);
      expect(f.err).toBeInstanceOf(BadReportFileError);
      expect(f.err.message).toBe(`${f.typed} is UTF-16 text, and cbp reads UTF-8: save or export it as UTF-8 (in a spreadsheet: "CSV UTF-8") and load it again.`);
    }
  });

  it('says a CSV file with two kinds of line break cannot be split into rows, and how to fix it', async () => {
    const f = await failure('cb.csv', 'case_number,mid,status,amount,date_received\nCB-1,MID-1,New,1,2024-03-01\rCB-2,MID-1,New,2,2024-03-01\n');
    expect(f.err).toBeInstanceOf(BadReportFileError);
    expect(f.err.message).toMatch(new RegExp(`^${f.typed} could not be split into CSV rows .*line breaks of two kinds.*save it with one kind of line break and load it again\\.$`));
  });

  it('says a missing file does not exist and a folder is not a report file', async () => {
    const dir = tmpDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    const err = await loadReport(store, path.join(path.relative(process.cwd(), dir), 'nope.csv'), { kind: 'chargebacks' }).then(
      () => new Error('loaded'),
      (e: Error) => e,
    );
    store.close();
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.message).toBe(`report file ${path.join(path.relative(process.cwd(), dir), 'nope.csv')} does not exist: check the path and load it again`);
    const folder = await failure('folder.csv', null);
    expect(folder.err).toBeInstanceOf(BadReportFileError);
    expect(folder.err.message).toBe(`${folder.typed} is a folder, not a report file: give the path of the report file itself.`);
  });

  it('turns what DuckDB and the system say into what to do', () => {
    const c = { shown: 'reports/cb.json', paths: ['/data/landing/chargebacks/import-1.json'], format: 'json' as const, kind: 'chargebacks' as const };
    const denied = readFailure(Object.assign(new Error('EACCES: permission denied, open \'/data/x\''), { code: 'EACCES' }), c);
    expect(denied).toBeInstanceOf(BadReportFileError);
    expect(denied.message).toBe('cannot read reports/cb.json: permission denied. Let the user running cbp read it (e.g. chmod u+r) and load it again.');
    expect(readFailure(new Error('IO Error: Cannot open file "/data/landing/chargebacks/import-1.json": Permission denied'), c).message).toMatch(/^cannot read reports\/cb\.json: permission denied/);
    const tooBig = readFailure(
      new Error('Invalid Input Error: "maximum_object_size" of 16777216 bytes exceeded while reading file "/data/landing/chargebacks/import-1.json" (>33554427 bytes).\n Try increasing "maximum_object_size".'),
      c,
    );
    expect(tooBig).toBeInstanceOf(BadReportFileError);
    expect(tooBig.message).toBe(
      "reports/cb.json holds a JSON record of more than 32.0 MiB that DuckDB's reader cannot take, and cbp could not set it apart either. Split the report into smaller files (a shorter window) and load them.",
    );
    const oom = readFailure(new Error('Out of Memory Error: failed to allocate data of size 512.0 MiB (964.0 KiB/244.1 MiB used)'), c);
    expect(oom).toBeInstanceOf(StoreUnavailableError);
    expect(oom.message).toBe('the store ran out of memory reading reports/cb.json: raise CBP_STORE_MEMORY_LIMIT (default 192MB), or load it again when other work on this machine is done.');
    const full = readFailure(new Error('IO Error: Could not write file "/data/cbp.duckdb.wal": No space left on device'), c);
    expect(full.message).toBe('the disk is full while loading reports/cb.json: free some space and load it again.');
    // Anything else keeps DuckDB's first line, the landing path shown as the user's file.
    expect(readFailure(new Error('Conversion Error: something odd in "/data/landing/chargebacks/import-1.json"\nLINE 1: ...'), c).message).toBe(
      'reports/cb.json could not be read as a JSON chargebacks report: something odd in "reports/cb.json"',
    );
  });
});

describe('cbp load of a file it cannot read', () => {
  const cbp = (dir: string, args: string[]) => runCbp(args, { cwd: dir, env: { CBP_DATA_DIR: path.join(dir, 'data'), CBP_LOG_LEVEL: 'silent' } });

  it('says a folder is not a report file, and where a JSON file is broken, with the path as typed', async () => {
    const dir = tmpDir();
    mkdirSync(path.join(dir, 'exports', 'march.csv'), { recursive: true });
    const folder = await cbp(dir, ['load', 'chargebacks', 'exports/march.csv']);
    expect(folder.code).toBe(1);
    expect(folder.stderr).toContain('exports/march.csv is a folder, not a report file: give the path of the report file itself.');
    writeFileSync(path.join(dir, 'exports', 'cb.json'), '[{"case_number":"1"},{"case_number":');
    const broken = await cbp(dir, ['load', 'chargebacks', 'exports/cb.json']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('exports/cb.json ends before its JSON array closes');
    expect(broken.stderr).not.toContain(dir);
  });
});
