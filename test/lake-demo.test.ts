// `cbp demo --lake` whole: its own PostgreSQL, a Temporal dev server, two workers as on two hosts, nothing left running.
// A file of its own (it runs long): the other lake cases run beside it in the other test process.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { skipTemporal } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';
import { addDays, utcDay } from '../lib/utc.ts';

describe.skipIf(skipLake)(lakeTitle('cbp demo --lake'), { timeout: 600_000 }, () => {
  it.skipIf(skipTemporal)('runs `cbp demo --lake`: its own PostgreSQL, a Temporal dev server with two workers as on two hosts sharing the work, and nothing left running', async () => {
    const dataDir = path.join(tempDir(), 'demo');
    // (the demo on a dev server runs long, longer beside other tests: the kill timer is a hang guard)
    // Two weeks of service time (by default from the first day of last month: up to eight weeks), as demo-temporal's.
    const start = addDays(utcDay(new Date().toISOString()), -14);
    const r = await cbp(['demo', '--lake', '--start', start, '--data-dir', dataDir, '--json'], {}, undefined, 540_000);
    expect(r.code, r.stderr).toBe(0);
    const port = Number(/\[lake\] PostgreSQL (\d+) \(catalog\)/.exec(r.stderr)?.[1]);
    expect(port).toBeGreaterThan(0);
    expect(r.stderr).toMatch(/two workers in this process as on two hosts of the lake/);
    const out = JSON.parse(r.stdout) as { ratios: unknown[]; alerts: unknown[]; temporal: { serverPid: number } };
    expect(out.ratios.length).toBeGreaterThan(20);
    expect(out.alerts.length).toBeGreaterThan(0);
    // Both hosts fetched report windows (each lands what it fetches in its own folder).
    const landed = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.json') && !String(f).endsWith('.meta.json')).length : 0);
    expect(landed(path.join(dataDir, 'landing'))).toBeGreaterThan(0);
    expect(landed(path.join(dataDir, 'host-b', 'landing'))).toBeGreaterThan(0);
    // Its PostgreSQL and its Temporal dev server are stopped.
    const refused = await new Promise<boolean>((resolve) => {
      const sock = net.connect(port, '127.0.0.1', () => { sock.destroy(); resolve(false); });
      sock.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(() => process.kill(out.temporal.serverPid, 0)).toThrow();
  });
});
