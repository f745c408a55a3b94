// `cbp run orders` and the rejected-orders part of `cbp status` through their real boundary (a child process)
// against a sandbox: the example files load cleanly (exit 0), a file with invalid and refused orders exits 1
// with its summary, `--retry-rejected` sends a refused order again, a key failure exits 1 naming the request
// and the settings to check (never the password), and `cbp status` lists the refused orders.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { admin, cbp, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('cbp run orders', { timeout: 180_000 }, () => {
  let sb: RunningSandbox;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sb = await sandbox();
    dir = tempDir();
    env = { ...sandboxEnv(sb, dir), CBP_LOG_LEVEL: 'error' };
  });
  afterAll(async () => {
    await sb?.close();
    rmrf(dir);
  });

  it('loads examples/orders.ndjson and examples/orders.csv against the sandbox (exit 0)', async () => {
    const a = await cbp(['run', 'orders', '--source', 'examples/orders.ndjson'], env, ROOT);
    expect(a.stderr).toBe('');
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/records read\s+\|\s+4/);
    expect(a.stdout).toMatch(/pushed\s+\|\s+4 \(4 new, 0 changed\)/);
    const b = await cbp(['run', 'orders', '--source', 'examples/orders.csv', '--json'], env, ROOT);
    expect(b.code).toBe(0);
    expect(JSON.parse(b.stdout)).toMatchObject({ read: 4, invalid: 0, rejected: 0, unchanged: 4 });
  });

  it('exits 1 with the summary when orders are invalid or refused; status lists the refused; --retry-rejected sends them again', async () => {
    const f = path.join(dir, 'mixed.ndjson');
    const ok = { order_date: '2026-01-02T03:04:05Z', order_total: '5.00', currency: 'USD' };
    fs.writeFileSync(
      f,
      [JSON.stringify({ order_id: 'M-1', ...ok }), JSON.stringify({ order_id: 'M-2', order_date: '2026-01-02T03:04:05Z' }), '', JSON.stringify({ order_id: 'M-3', ...ok, cc_last_4: '12' })].join('\n') + '\n',
    );
    const r = await cbp(['run', 'orders', '--source', f], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/records read\s+\|\s+3/);
    expect(r.stdout).toMatch(/rejected by the service\s+\|\s+1/);
    expect(r.stdout).toMatch(/invalid in the file\s+\|\s+1/);
    expect(r.stdout).toMatch(/rejected M-2 \(HTTP 422\): .*order_total/);
    expect(r.stdout).toMatch(/invalid line 4 \(M-3\): cc_last_4/);
    expect(r.stdout).toContain('--retry-rejected');

    const st = await cbp(['status'], env);
    expect(st.code).toBe(0);
    expect(st.stdout).toMatch(/Rejected orders \(refused by the service, not sent again until changed\): 1/);
    expect(st.stdout).toMatch(/M-2\s+\|\s+422\s+\|\s+.*order_total/);
    expect(st.stdout).toMatch(/Invalid lines in order files \(not sent\): 1/);
    const js = JSON.parse((await cbp(['status', '--json'], env)).stdout) as { orders: { rejected: number; recentRejected: Array<{ order_id: string; http_status: number }> } };
    expect(js.orders).toMatchObject({ rejected: 1, recentRejected: [{ order_id: 'M-2', http_status: 422 }] });

    // Unchanged: still held back, still exit 1.
    const again = await cbp(['run', 'orders', '--source', f, '--json'], env);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ stillRejected: 1, unchanged: 1, invalid: 1, pushed: 0 });
    // Sent again as it is: the service refuses it once more (it lacks order_total), and says so.
    const retried = await cbp(['run', 'orders', '--source', f, '--retry-rejected', '--json'], env);
    expect(retried.code).toBe(1);
    expect(JSON.parse(retried.stdout)).toMatchObject({ stillRejected: 0, rejected: 1, rejectedOrders: [{ order_id: 'M-2', http_status: 422 }] });
  });

  it('exits 1 when the order data key cannot be had, naming POST /auth and the settings, never the password', async () => {
    const f = path.join(dir, 'key.ndjson');
    fs.writeFileSync(f, `${JSON.stringify({ order_id: 'KEY-1', order_date: '2026-01-02T03:04:05Z', order_total: '5.00' })}\n`);
    const r = await cbp(['run', 'orders', '--source', f], { ...env, CBP_DATA_PASSWORD: 'not-the-sandbox-password' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/POST \/auth failed with HTTP 401/);
    expect(r.stderr).toMatch(/CBP_DATA_USERNAME and CBP_DATA_PASSWORD/);
    expect(r.stderr).toContain('CBP_ERR_DATA_KEY');
    expect(r.stderr).not.toContain('not-the-sandbox-password');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect((await admin<Array<{ order_id: string }>>(sb, 'GET', '/orders')).map((o) => o.order_id)).not.toContain('KEY-1');
    const st = JSON.parse((await cbp(['status', '--json'], env)).stdout) as { runs: Array<{ workflow: string; status: string; error: string | null }> };
    expect(st.runs[0]).toMatchObject({ workflow: 'pushOrders', status: 'failed', error: expect.stringMatching(/POST \/auth/) });
  });
});
