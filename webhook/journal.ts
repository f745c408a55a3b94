// The event journal: append-only NDJSON segments in one directory, written by one receiver.
// An append resolves only once its bytes are fdatasync'd (durability before acknowledgement). Appends that
// arrive while a sync is in flight wait for the next batch, which is written with one write and synced with
// one fdatasync (group commit), so N concurrent requests cost far fewer than N syncs.
//
// Files (segment names: lib/journal-files.ts, shared with the ingest):
//   seg-<seq>-<opened>-<tag>.ndjson   the open segment (only the live receiver writes it; ingest never reads it)
//   seg-<seq>-<opened>-<tag>.closed   a sealed segment: complete lines only, ready for ingest
//   archive/                          sealed segments ingest has committed to the store
//   receiver.lock                     the owner's OS lock (webhook/lock.ts); its content names the owner's pid
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { CbpError } from '../lib/errors.ts';
import { closedName, openSegmentName } from '../lib/journal-files.ts';
import { acquireLock } from './lock.ts';
import { nextSeq, recoverOpenSegments } from './journal-recover.ts';


export const SEGMENT_MAX_BYTES_DEFAULT = 64 * 1024 * 1024;
export const SEGMENT_MAX_AGE_MS_DEFAULT = 60_000;

/** The journal cannot take the event now (disk error, closing): the receiver answers 503, the service re-sends. */
export class JournalUnavailableError extends CbpError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super('CBP_ERR_JOURNAL_UNAVAILABLE', message, opts);
  }
}

/**
 * The few file operations the hot path needs. Injectable so tests can count syncs, slow them down or make
 * them fail; startup work (lock, recovery) uses node:fs directly.
 */
export interface JournalFs {
  /** Opens (creating) a file for appending; returns a descriptor. */
  open(file: string): Promise<number>;
  /** Writes the whole buffer at the end of the file. */
  write(fd: number, buf: Buffer): Promise<void>;
  datasync(fd: number): Promise<void>;
  truncate(fd: number, size: number): Promise<void>;
  close(fd: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** fsyncs a directory, so created and renamed entries survive a crash. */
  syncDir(dir: string): Promise<void>;
}

function cb<T>(fn: (done: (err: NodeJS.ErrnoException | null, v?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))));
}

export const nodeJournalFs: JournalFs = {
  open: (file) => cb<number>((d) => fs.open(file, 'a', 0o640, d)),
  async write(fd, buf) {
    let off = 0;
    while (off < buf.length) {
      const n = await cb<number>((d) => fs.write(fd, buf, off, buf.length - off, null, d));
      off += n;
    }
  },
  datasync: (fd) => cb<void>((d) => fs.fdatasync(fd, d)),
  truncate: (fd, size) => cb<void>((d) => fs.ftruncate(fd, size, d)),
  close: (fd) => cb<void>((d) => fs.close(fd, d)),
  rename: (a, b) => fsp.rename(a, b),
  async syncDir(dir) {
    const fd = await cb<number>((d) => fs.open(dir, 'r', d));
    try {
      await cb<void>((d) => fs.fsync(fd, d));
    } finally {
      await cb<void>((d) => fs.close(fd, d));
    }
  },
};

export interface JournalOptions {
  dir: string;
  /** Seal the open segment once it holds this many bytes. Default 64 MiB. */
  segmentMaxBytes?: number;
  /** Seal a non-empty open segment this long after it was opened. Default 60 s. */
  segmentMaxAgeMs?: number;
  fs?: JournalFs;
  now?: () => Date;
  /** How often the age rule is checked; 0 disables the timer (tests call rotateIfDue()). Default min(age, 1 s). */
  checkIntervalMs?: number;
  onEvent?: (e: JournalEvent) => void;
}

export type JournalEvent =
  | { kind: 'recovered'; segment: string; lines: number; droppedBytes: number }
  | { kind: 'sealed'; segment: string; bytes: number; lines: number; why: 'size' | 'age' | 'close' | 'error' }
  | { kind: 'error'; message: string }
  | { kind: 'lock-taken-over'; stalePid: number }
  | { kind: 'lock-weak'; message: string };

export interface JournalStatus {
  state: 'open' | 'broken' | 'closing' | 'closed';
  dir: string;
  segment: string | null;
  segmentBytes: number;
  appended: number;
  syncs: number;
  sealed: number;
  lastError: string | null;
  /** The failed call's error code (EIO, ENOSPC, ...), without the message's file path. */
  lastErrorCode: string | null;
}

interface Pending {
  buf: Buffer;
  resolve: () => void;
  reject: (e: Error) => void;
}

interface OpenSegment {
  name: string;
  fd: number;
  size: number;
  lines: number;
  openedAt: number;
}

export class Journal {
  readonly dir: string;
  private readonly fs: JournalFs;
  private readonly now: () => Date;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly onEvent: (e: JournalEvent) => void;
  private state: JournalStatus['state'] = 'open';
  private seq: number;
  private seg: OpenSegment | null = null;
  private pending: Pending[] = [];
  private flushing = false;
  private idleWaiters: Array<() => void> = [];
  private rotateWanted: 'age' | null = null;
  private timer: NodeJS.Timeout | null = null;
  private releaseLock: () => void;
  private lastError: string | null = null;
  private lastErrorCode: string | null = null;
  private counters = { appended: 0, syncs: 0, sealed: 0 };
  private closing: Promise<void> | null = null;

  /** Use openJournal(): it takes the lock and recovers before anything is appended. */
  constructor(opts: JournalOptions, releaseLock: () => void) {
    this.dir = opts.dir;
    this.fs = opts.fs ?? nodeJournalFs;
    this.now = opts.now ?? (() => new Date());
    this.maxBytes = opts.segmentMaxBytes ?? SEGMENT_MAX_BYTES_DEFAULT;
    this.maxAgeMs = opts.segmentMaxAgeMs ?? SEGMENT_MAX_AGE_MS_DEFAULT;
    this.onEvent = opts.onEvent ?? (() => {});
    this.releaseLock = releaseLock;
    this.seq = nextSeq(this.dir);
    const every = opts.checkIntervalMs ?? Math.min(this.maxAgeMs, 1000);
    if (every > 0) {
      this.timer = setInterval(() => void this.rotateIfDue(), every);
      this.timer.unref();
    }
  }

  status(): JournalStatus {
    return {
      state: this.state,
      dir: this.dir,
      segment: this.seg?.name ?? null,
      segmentBytes: this.seg?.size ?? 0,
      ...this.counters,
      lastError: this.lastError,
      lastErrorCode: this.lastErrorCode,
    };
  }

  /** True while appends can be accepted. A failed batch makes it false until the next batch succeeds. */
  get healthy(): boolean {
    return this.state === 'open';
  }

  /**
   * Appends one record (a JSON object without newlines; the newline is added here). Resolves once it is on
   * disk; rejects with JournalUnavailableError if it is not (the caller must not acknowledge it).
   */
  append(record: Buffer | string): Promise<void> {
    if (this.state === 'closing' || this.state === 'closed') {
      return Promise.reject(new JournalUnavailableError('the receiver is shutting down; the event was not stored, send it again'));
    }
    const body = typeof record === 'string' ? Buffer.from(record) : record;
    const buf = Buffer.allocUnsafe(body.length + 1);
    body.copy(buf);
    buf[body.length] = 0x0a;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ buf, resolve, reject });
      this.kick();
    });
  }

  /** Seals the open segment if it is older than the age limit. Called by the timer. */
  async rotateIfDue(): Promise<void> {
    if (!this.seg || this.state === 'closed') return;
    if (this.now().getTime() - this.seg.openedAt < this.maxAgeMs) return;
    this.rotateWanted = 'age';
    this.kick();
    await this.idle();
  }

  /** Stops taking appends, finishes the batches in flight, seals the open segment, releases the lock. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.state = 'closing';
    if (this.timer) clearInterval(this.timer);
    await this.idle();
    if (this.seg) {
      try {
        await this.seal('close');
      } catch (e) {
        // Left open-named: the next start seals it, dropping nothing acknowledged.
        this.onEvent({ kind: 'error', message: `sealing the open segment at close failed: ${(e as Error).message}` });
      }
    }
    this.releaseLock();
    this.state = 'closed';
  }

  /** Marks the journal as closing: new appends get 503 at once (used as soon as a shutdown signal arrives). */
  beginClose(): void {
    if (this.state === 'open' || this.state === 'broken') this.state = 'closing';
  }

  private idle(): Promise<void> {
    if (!this.flushing && this.pending.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      // Bounded: each pass either commits what is pending or performs the one requested rotation.
      while (this.pending.length > 0 || this.rotateWanted) {
        if (this.rotateWanted && this.seg) {
          this.rotateWanted = null;
          try {
            await this.seal('age');
          } catch (e) {
            this.fail(e);
          }
          continue;
        }
        this.rotateWanted = null;
        if (this.pending.length === 0) break;
        const batch = this.pending;
        this.pending = [];
        await this.commit(batch);
      }
    } finally {
      this.flushing = false;
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
    }
  }

  private async commit(batch: Pending[]): Promise<void> {
    const buf = batch.length === 1 ? batch[0].buf : Buffer.concat(batch.map((p) => p.buf));
    let seg: OpenSegment | null = null;
    let before = 0;
    try {
      if (this.seg && (this.seg.size >= this.maxBytes || this.now().getTime() - this.seg.openedAt >= this.maxAgeMs)) {
        await this.seal(this.seg.size >= this.maxBytes ? 'size' : 'age');
      }
      seg = this.seg ?? (await this.openSegment());
      before = seg.size;
      await this.fs.write(seg.fd, buf);
      seg.size += buf.length;
      await this.fs.datasync(seg.fd);
      this.counters.syncs++;
    } catch (e) {
      if (seg) await this.abandon(seg, before);
      this.fail(e);
      const err = new JournalUnavailableError('the journal could not store the event; send it again', { cause: e });
      for (const p of batch) p.reject(err);
      return;
    }
    seg.lines += batch.length;
    this.counters.appended += batch.length;
    if (this.state === 'broken') this.state = 'open';
    this.lastError = null;
    this.lastErrorCode = null;
    for (const p of batch) p.resolve();
    if (seg.size >= this.maxBytes) {
      try {
        await this.seal('size');
      } catch (e) {
        this.fail(e);
      }
    }
  }

  private fail(e: unknown): void {
    this.lastError = (e as Error)?.message ?? String(e);
    const code = (e as NodeJS.ErrnoException)?.code;
    this.lastErrorCode = typeof code === 'string' ? code : 'error';
    if (this.state === 'open') this.state = 'broken';
    this.onEvent({ kind: 'error', message: this.lastError });
  }

  /**
   * After a failed write or sync the segment's tail is unknown (a sync error may have dropped pages), so the
   * batch is cut off, the segment is sealed as it stood before the batch, and the next batch starts a new one.
   * If even that fails, the file stays open-named and the next start's recovery seals it.
   */
  private async abandon(seg: OpenSegment, goodSize: number): Promise<void> {
    this.seg = null;
    try {
      await this.fs.truncate(seg.fd, goodSize);
      await this.fs.datasync(seg.fd);
    } catch {
      // best effort
    }
    try {
      await this.fs.close(seg.fd);
    } catch {
      // best effort
    }
    try {
      if (goodSize === 0) {
        await fsp.unlink(path.join(this.dir, seg.name));
      } else {
        await this.fs.rename(path.join(this.dir, seg.name), path.join(this.dir, closedName(seg.name)));
        this.counters.sealed++;
        this.onEvent({ kind: 'sealed', segment: closedName(seg.name), bytes: goodSize, lines: seg.lines, why: 'error' });
      }
      await this.fs.syncDir(this.dir);
    } catch {
      // recovery at the next start handles it
    }
  }

  private async openSegment(): Promise<OpenSegment> {
    const opened = this.now();
    const name = openSegmentName(this.seq, opened);
    this.seq++;
    const fd = await this.fs.open(path.join(this.dir, name));
    // The new entry must be durable before any event in it is acknowledged.
    try {
      await this.fs.syncDir(this.dir);
    } catch (e) {
      await this.fs.close(fd).catch(() => {});
      throw e;
    }
    this.seg = { name, fd, size: 0, lines: 0, openedAt: opened.getTime() };
    return this.seg;
  }

  private async seal(why: 'size' | 'age' | 'close'): Promise<void> {
    const seg = this.seg;
    if (!seg) return;
    this.seg = null;
    await this.fs.close(seg.fd);
    if (seg.size === 0) {
      await fsp.unlink(path.join(this.dir, seg.name));
    } else {
      await this.fs.rename(path.join(this.dir, seg.name), path.join(this.dir, closedName(seg.name)));
      this.counters.sealed++;
      this.onEvent({ kind: 'sealed', segment: closedName(seg.name), bytes: seg.size, lines: seg.lines, why });
    }
    await this.fs.syncDir(this.dir);
  }
}

/**
 * Opens the journal in dir: creates it, takes its lock, seals whatever a killed receiver left open, and
 * returns a journal ready for appends.
 */
export function openJournal(opts: JournalOptions): Journal {
  fs.mkdirSync(opts.dir, { recursive: true });
  const release = acquireLock(opts.dir, {
    onTakeOver: (stalePid) => opts.onEvent?.({ kind: 'lock-taken-over', stalePid }),
    onWeakLock: (message) => opts.onEvent?.({ kind: 'lock-weak', message }),
  });
  try {
    recoverOpenSegments(opts.dir, opts.onEvent);
    return new Journal(opts, release);
  } catch (e) {
    release();
    throw e;
  }
}
