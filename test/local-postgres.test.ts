// lib/local-postgres.ts: the lake suites' and `cbp demo --lake`'s own PostgreSQL stops without holding the process.
import { describe, expect, it } from 'vitest';
import { lakeTitle, skipLake, startPostgres } from './helpers/postgres.ts';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe.skipIf(skipLake)(lakeTitle('a local PostgreSQL'), () => {
  it('leaves no timer behind when it stops, so the process that started it exits at once', async () => {
    const before = timers();
    const pg = await startPostgres();
    await pg.crash();
    await pg.start();
    await pg.stop();
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
