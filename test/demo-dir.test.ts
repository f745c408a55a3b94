// `cbp demo --data-dir DIR` wipes DIR at start: only a folder an earlier demo created (its marker), or an empty
// one, and never one that holds the configured store.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_MARKER, prepareDemoDir } from '../cli/demo-dir.ts';
import { cbp, rmrf, tempDir } from './activities-fixtures.ts';

let dir: string;
beforeEach(() => {
  dir = tempDir();
});
afterEach(() => rmrf(dir));

describe('the demo data folder', () => {
  it('creates a new folder and marks it as the demo\'s', () => {
    const d = prepareDemoDir(path.join(dir, 'new', 'demo'), []);
    expect(fs.readdirSync(d)).toEqual([DEMO_MARKER]);
  });

  it('takes an empty folder and marks it', () => {
    const d = path.join(dir, 'empty');
    fs.mkdirSync(d);
    prepareDemoDir(d, []);
    expect(fs.readdirSync(d)).toEqual([DEMO_MARKER]);
  });

  it('wipes a folder an earlier demo created, keeping its marker', () => {
    const d = prepareDemoDir(path.join(dir, 'demo'), []);
    fs.mkdirSync(path.join(d, 'journal'));
    fs.writeFileSync(path.join(d, 'journal', 'seg.ndjson'), '{}\n');
    fs.writeFileSync(path.join(d, 'cbp.duckdb'), 'x');
    prepareDemoDir(d, []);
    expect(fs.readdirSync(d)).toEqual([DEMO_MARKER]);
  });

  it('refuses a non-empty folder it did not create, and touches nothing in it', () => {
    const d = path.join(dir, 'data');
    fs.mkdirSync(path.join(d, 'journal'), { recursive: true });
    fs.writeFileSync(path.join(d, 'cbp.duckdb'), 'the real store');
    fs.writeFileSync(path.join(d, 'journal', 'open.ndjson'), '{"event_guid":"A"}\n');
    expect(() => prepareDemoDir(d, [])).toThrow(/not empty and was not created by cbp demo/);
    expect(fs.readFileSync(path.join(d, 'cbp.duckdb'), 'utf8')).toBe('the real store');
    expect(fs.existsSync(path.join(d, 'journal', 'open.ndjson'))).toBe(true);
    expect(fs.existsSync(path.join(d, DEMO_MARKER))).toBe(false);
  });

  it('refuses a folder holding the configured store even when it carries the marker', () => {
    const d = prepareDemoDir(path.join(dir, 'demo'), []);
    fs.writeFileSync(path.join(d, 'cbp.duckdb'), 'configured store');
    expect(() => prepareDemoDir(d, [{ name: 'store (CBP_DB_PATH)', path: path.join(d, 'cbp.duckdb') }])).toThrow(/holds the configured store/);
    expect(fs.readFileSync(path.join(d, 'cbp.duckdb'), 'utf8')).toBe('configured store');
  });

  it('refuses a parent of the configured data folder', () => {
    expect(() => prepareDemoDir(dir, [{ name: 'data folder (CBP_DATA_DIR)', path: path.join(dir, 'data') }])).toThrow(/holds the configured data folder/);
  });

  it('refuses a file', () => {
    const f = path.join(dir, 'file');
    fs.writeFileSync(f, 'x');
    expect(() => prepareDemoDir(f, [])).toThrow(/is a file/);
    expect(fs.readFileSync(f, 'utf8')).toBe('x');
  });
});

describe('cbp demo --data-dir', () => {
  it('exits 2 on a non-empty folder it did not create, before starting anything', async () => {
    const d = path.join(dir, 'data');
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'cbp.duckdb'), 'the real store');
    const r = await cbp(['demo', '--data-dir', d]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refuses --data-dir .*not created by cbp demo/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(fs.readdirSync(d)).toEqual(['cbp.duckdb']);
  });

  it('exits 2 on the configured data folder (CBP_DATA_DIR), even an empty one', async () => {
    const d = path.join(dir, 'store');
    fs.mkdirSync(d);
    const r = await cbp(['demo', '--data-dir', d], { CBP_DATA_DIR: d });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/holds the configured/);
    expect(fs.readdirSync(d)).toEqual([]);
  });
});

describe('cbp demo with a configuration that does not load', () => {
  it('exits 2 naming the problem and wipes nothing, even a folder an earlier demo marked', async () => {
    // A .env that names the demo's folder as the store, with one bad line: the demo must not guess the paths.
    const work = tempDir();
    const d = path.join(work, 'data', 'demo');
    fs.mkdirSync(path.join(d, 'journal'), { recursive: true });
    fs.writeFileSync(path.join(d, DEMO_MARKER), 'earlier demo');
    fs.writeFileSync(path.join(d, 'cbp.duckdb'), 'the configured store');
    fs.writeFileSync(path.join(d, 'journal', 'seg-000001.ndjson'), '{"event_guid":"A"}\n');
    fs.writeFileSync(path.join(work, '.env'), 'CBP_DATA_DIR=data/demo\nCBP_EVENTS_BASE_URL=http://events.example.com/v1\n');
    const r = await cbp(['demo', '--data-dir', 'data/demo'], {}, work);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/CBP_EVENTS_BASE_URL/);
    expect(r.stderr).toMatch(/never wipes the configured store/);
    expect(fs.readFileSync(path.join(d, 'cbp.duckdb'), 'utf8')).toBe('the configured store');
    expect(fs.existsSync(path.join(d, 'journal', 'seg-000001.ndjson'))).toBe(true);
  });
});
