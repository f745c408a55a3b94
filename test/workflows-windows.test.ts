import { describe, expect, it } from 'vitest';
import { runBounded } from '../lib/pool.ts';
import { backfillTasks, calendarMonths, nightlyTasks, rollingWindows, taskId, trailingWindows, windowsFor } from '../workflows/windows.ts';
import { addDays, dayNumber, laterInstant, utcDay, windowBounds, windowComplete, windowDayCount, windowId } from '../lib/utc.ts';

const ids = (ws: Array<{ from: string; to: string }>) => ws.map(windowId);

describe('days (UTC)', () => {
  it('reads the UTC day of a date-time, moving an offset to UTC', () => {
    expect(utcDay('2026-03-15')).toBe('2026-03-15');
    expect(utcDay('2026-03-15T23:59:59Z')).toBe('2026-03-15');
    expect(utcDay('2026-03-15T23:30:00-02:00')).toBe('2026-03-16');
    expect(utcDay('2026-03-16T00:30:00+01:00')).toBe('2026-03-15');
    expect(utcDay('2026-03-15 23:59:59')).toBe('2026-03-15'); // no zone: UTC
    expect(utcDay('2026-03-15T10:00:00.123Z')).toBe('2026-03-15');
  });

  it('refuses days that do not exist', () => {
    expect(() => dayNumber('2026-02-29')).toThrow(/not a calendar date/);
    expect(() => dayNumber('2026-13-01')).toThrow(/not a calendar date/);
    expect(() => dayNumber('yesterday')).toThrow(/not a date/);
    expect(dayNumber('2024-02-29')).toBe(dayNumber('2024-02-28') + 1);
  });

  it('adds days across month, leap-day and year boundaries', () => {
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2023-02-28', 1)).toBe('2023-03-01');
    expect(addDays('2025-12-31', 1)).toBe('2026-01-01');
    expect(addDays('2026-01-01', -1)).toBe('2025-12-31');
  });

  it('bounds a window by whole UTC days, both ends included', () => {
    expect(windowBounds({ from: '2026-03-01', to: '2026-03-07' })).toEqual({ start: '2026-03-01T00:00:00Z', end: '2026-03-07T23:59:59Z' });
    expect(windowDayCount({ from: '2026-03-01', to: '2026-03-07' })).toBe(7);
    expect(windowId({ from: '2026-03-01', to: '2026-03-07' })).toBe('2026-03-01..2026-03-07');
    expect(taskId({ kind: 'prevention', window: { from: '2026-03-01', to: '2026-03-07' } })).toBe('prevention:2026-03-01..2026-03-07');
  });
});

describe('rolling windows', () => {
  it('splits a range forward into windowDays windows and cuts the last at the end', () => {
    expect(ids(rollingWindows('2026-01-01', '2026-01-20', 7))).toEqual(['2026-01-01..2026-01-07', '2026-01-08..2026-01-14', '2026-01-15..2026-01-20']);
  });

  it('makes one window per day with windowDays 1', () => {
    expect(ids(rollingWindows('2025-12-30', '2026-01-02', 1))).toEqual([
      '2025-12-30..2025-12-30',
      '2025-12-31..2025-12-31',
      '2026-01-01..2026-01-01',
      '2026-01-02..2026-01-02',
    ]);
  });

  it('covers every day exactly once, across a leap year end', () => {
    const ws = rollingWindows('2024-02-20', '2025-01-10', 9);
    let expected = '2024-02-20';
    for (const w of ws) {
      expect(w.from).toBe(expected);
      expected = addDays(w.to, 1);
    }
    expect(addDays(expected, -1)).toBe('2025-01-10');
    expect(ws.reduce((n, w) => n + windowDayCount(w), 0)).toBe(dayNumber('2025-01-10') - dayNumber('2024-02-20') + 1);
  });

  it('gives one window for a single day, and one for a range shorter than windowDays', () => {
    expect(ids(rollingWindows('2026-03-15', '2026-03-15', 7))).toEqual(['2026-03-15..2026-03-15']);
    expect(ids(rollingWindows('2026-03-10', '2026-03-12', 30))).toEqual(['2026-03-10..2026-03-12']);
  });

  it('refuses from after to, and a windowDays below 1', () => {
    expect(() => rollingWindows('2026-03-02', '2026-03-01', 7)).toThrow(/starts after it ends/);
    expect(() => rollingWindows('2026-03-01', '2026-03-02', 0)).toThrow(/windowDays/);
    expect(() => rollingWindows('2026-03-01', '2026-03-02', 1.5)).toThrow(/windowDays/);
  });

  it('ends trailing windows on asOf and reaches back lookbackDays days, asOf included', () => {
    const ws = trailingWindows('2026-03-15T02:30:00Z', 20, 7);
    expect(ids(ws)).toEqual(['2026-02-24..2026-03-01', '2026-03-02..2026-03-08', '2026-03-09..2026-03-15']);
    expect(ws.reduce((n, w) => n + windowDayCount(w), 0)).toBe(20);
  });

  it('cuts the oldest trailing window at the lookback start', () => {
    expect(ids(trailingWindows('2026-01-03', 10, 7))).toEqual(['2025-12-25..2025-12-27', '2025-12-28..2026-01-03']);
    expect(ids(trailingWindows('2026-01-03', 1, 7))).toEqual(['2026-01-03..2026-01-03']);
  });
});

describe('calendar months (the MID report)', () => {
  it('splits at month ends, whole months from the 1st, the last month to date', () => {
    expect(ids(calendarMonths('2026-01-15', '2026-03-10'))).toEqual(['2026-01-01..2026-01-31', '2026-02-01..2026-02-28', '2026-03-01..2026-03-10']);
  });

  it('knows February of a leap year', () => {
    expect(ids(calendarMonths('2024-02-01', '2024-03-31'))).toEqual(['2024-02-01..2024-02-29', '2024-03-01..2024-03-31']);
    expect(ids(calendarMonths('2100-02-01', '2100-02-28'))).toEqual(['2100-02-01..2100-02-28']); // 2100: not a leap year
  });

  it('crosses a year boundary', () => {
    expect(ids(calendarMonths('2025-11-20', '2026-01-05'))).toEqual(['2025-11-01..2025-11-30', '2025-12-01..2025-12-31', '2026-01-01..2026-01-05']);
  });

  it('gives the month-to-date for a range inside one month, and a one-day month start', () => {
    expect(ids(calendarMonths('2026-03-10', '2026-03-15'))).toEqual(['2026-03-01..2026-03-15']);
    expect(ids(calendarMonths('2026-03-01', '2026-03-01'))).toEqual(['2026-03-01..2026-03-01']);
  });

  it('ends a range on the last day of a month with that whole month', () => {
    expect(ids(calendarMonths('2026-04-30', '2026-04-30'))).toEqual(['2026-04-01..2026-04-30']);
    expect(ids(calendarMonths('2026-01-31', '2026-02-01'))).toEqual(['2026-01-01..2026-01-31', '2026-02-01..2026-02-01']);
  });

  it('refuses from after to', () => {
    expect(() => calendarMonths('2026-03-02', '2026-03-01')).toThrow(/starts after it ends/);
  });

  it('picks months for the MID report and rolling windows for the others', () => {
    expect(ids(windowsFor('mid_report', '2026-01-10', '2026-02-05', 7))).toEqual(['2026-01-01..2026-01-31', '2026-02-01..2026-02-05']);
    expect(windowsFor('chargebacks', '2026-01-10', '2026-02-05', 7)).toHaveLength(4);
  });
});

describe('what a run covers', () => {
  it('plans a nightly run: trailing windows per kind, and the months the lookback touches for the MID report', () => {
    const tasks = nightlyTasks(['chargebacks', 'prevention', 'mid_report'], '2026-03-15T02:30:00Z', 60, 14);
    const by = (k: string) => tasks.filter((t) => t.kind === k).map((t) => windowId(t.window));
    // 60 days back from 2026-03-15 included: 2026-01-15 .. 2026-03-15
    expect(by('chargebacks')).toEqual([
      '2026-01-15..2026-01-18',
      '2026-01-19..2026-02-01',
      '2026-02-02..2026-02-15',
      '2026-02-16..2026-03-01',
      '2026-03-02..2026-03-15',
    ]);
    expect(by('prevention')).toEqual(by('chargebacks'));
    expect(by('mid_report')).toEqual(['2026-01-01..2026-01-31', '2026-02-01..2026-02-28', '2026-03-01..2026-03-15']);
  });

  it('plans a backfill per kind over the range', () => {
    const tasks = backfillTasks(['prevention', 'mid_report'], '2025-12-01', '2026-01-31', 31);
    expect(tasks.map(taskId)).toEqual([
      'prevention:2025-12-01..2025-12-31',
      'prevention:2026-01-01..2026-01-31',
      'mid_report:2025-12-01..2025-12-31',
      'mid_report:2026-01-01..2026-01-31',
    ]);
  });
});

describe('bounded parallelism', () => {
  it('never runs more than the limit at once and returns results in item order', async () => {
    let active = 0;
    let max = 0;
    const out = await runBounded([5, 1, 3, 2, 4, 1, 1, 2], 3, async (ms) => {
      active++;
      max = Math.max(max, active);
      await new Promise((r) => setTimeout(r, ms));
      active--;
      return ms * 10;
    });
    expect(max).toBe(3);
    expect(out.results).toEqual([50, 10, 30, 20, 40, 10, 10, 20]);
    expect(out.notStarted).toEqual([]);
  });

  it('starts nothing new after a failure, lets running items finish, then throws the first error', async () => {
    const finished: number[] = [];
    await expect(
      runBounded([1, 2, 3, 4, 5, 6], 2, async (n) => {
        await new Promise((r) => setTimeout(r, n === 2 ? 5 : 1));
        if (n === 3) throw new Error('boom 3');
        finished.push(n);
        return n;
      }),
    ).rejects.toThrow('boom 3');
    expect(finished).toContain(2); // in flight when 3 failed: allowed to finish
    expect(finished).not.toContain(6);
  });

  it('stops taking items when asked and hands back the rest', async () => {
    let started = 0;
    const out = await runBounded([1, 2, 3, 4, 5], 2, async (n) => n, { shouldStop: () => started++ >= 3 });
    expect(out.started).toBe(3);
    expect(out.notStarted).toEqual([4, 5]);
  });
});

describe('window completeness by the service clock', () => {
  const w = { from: '2026-01-01', to: '2026-01-07' };

  it('counts a window whole only when the service answered at or after its last second', () => {
    expect(windowComplete(w, '2026-01-07T23:59:59Z')).toBe(true);
    expect(windowComplete(w, '2026-01-08T00:00:00Z')).toBe(true);
    expect(windowComplete(w, '2026-01-07T23:59:58Z')).toBe(false);
    // The sandbox standing at its start: a window starting that day is still running.
    expect(windowComplete(w, '2026-01-01T00:00:00Z')).toBe(false);
  });

  it('compares instants, not text: milliseconds and offsets are read as times', () => {
    expect(windowComplete(w, '2026-01-07T23:59:59.000Z')).toBe(true);
    expect(windowComplete(w, '2026-01-08T01:00:00+02:00')).toBe(false);
    expect(laterInstant('2026-01-07T23:59:59Z', '2026-01-07T23:59:59.500Z')).toBe('2026-01-07T23:59:59.500Z');
    expect(laterInstant(null, '2026-01-01T00:00:00Z')).toBe('2026-01-01T00:00:00Z');
  });

  it('refuses a service time that is not a date-time', () => {
    expect(() => windowComplete(w, 'yesterday')).toThrow(/not a date-time/);
  });
});
