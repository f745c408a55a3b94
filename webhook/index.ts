// The event receiver: Basic auth, durable journal, health.
export { buildReceiver, startReceiver, beginClose, journalRecord, BODY_LIMIT_DEFAULT, EVENTS_PATH_DEFAULT } from './server.ts';
export type { EventSink, ReceiverOptions, StartReceiverOptions, RunningReceiver } from './server.ts';
export {
  openJournal,
  Journal,
  JournalUnavailableError,
  JournalLockedError,
  nodeJournalFs,
  listClosedSegments,
  recoverOpenSegments,
  acquireLock,
  segmentInfo,
  closedName,
  SEGMENT_MAX_BYTES_DEFAULT,
  SEGMENT_MAX_AGE_MS_DEFAULT,
  ARCHIVE_DIR,
  LOCK_FILE,
} from './journal.ts';
export type { JournalFs, JournalOptions, JournalEvent, JournalStatus } from './journal.ts';
export { basicAuthChecker, parseBasic, WWW_AUTHENTICATE } from './auth.ts';
export type { BasicCredentials } from './auth.ts';
