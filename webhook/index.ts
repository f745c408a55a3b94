// The event receiver: Basic auth, durable journal (OS-locked), health.
export {
  buildReceiver,
  beginClose,
  journalRecord,
  BODY_LIMIT_DEFAULT,
  EVENTS_PATH_DEFAULT,
  HEADERS_TIMEOUT_MS_DEFAULT,
  REQUEST_TIMEOUT_MS_DEFAULT,
  MAX_CONNECTIONS_DEFAULT,
} from './server.ts';
export type { EventSink, ReceiverOptions } from './server.ts';
export { startReceiver, type StartReceiverOptions, type RunningReceiver } from './start.ts';
export { assertTransport, isLoopbackHost } from './transport.ts';
export {
  openJournal,
  Journal,
  JournalUnavailableError,
  nodeJournalFs,
  SEGMENT_MAX_BYTES_DEFAULT,
  SEGMENT_MAX_AGE_MS_DEFAULT,
} from './journal.ts';
export { recoverOpenSegments } from './journal-recover.ts';
export type { JournalFs, JournalOptions, JournalEvent, JournalStatus } from './journal.ts';
export { acquireLock, JournalLockedError, LOCK_FILE } from './lock.ts';
export { ARCHIVE_DIR, closedName, listClosedSegments, segmentInfo } from '../lib/journal-files.ts';
export { assertReceiverCredentials, basicAuthChecker, parseBasic, weakCredentialProblems, PASSWORD_MIN_LENGTH, WWW_AUTHENTICATE } from './auth.ts';
export { repeatedKeyOf, repeatedTopLevelKey } from './keys.ts';
export type { BasicCredentials } from './auth.ts';
