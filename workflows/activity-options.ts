// Timeouts and retry policies of the activities, by what they talk to. Pure data: shared by the Temporal
// bindings (workflows/temporal.ts) and the tests that check them.
import type { ActivityOptions } from '@temporalio/common';
import type { Activities } from '../activities/types.ts';
import { nonRetryableTypes } from '../lib/errors.ts';

/**
 * Error types a retry cannot fix, from the error catalog (lib/errors.ts): every code it marks not retryable
 * (which worker/activity-errors.ts makes the ApplicationFailure type, nonRetryable too), and the class names
 * of the classes whose codes all are (the type of an error that reaches Temporal unwrapped). Listed as well
 * as marked nonRetryable so a failure raised without the wrapper is not retried either.
 */
export const NON_RETRYABLE_ERROR_TYPES: readonly string[] = nonRetryableTypes();

/** Report downloads: long, streamed, heartbeating. A stalled download is noticed within a minute. */
export const REPORT_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
};

/**
 * Calls to the service (lookups, subscriptions, notices): minutes at most. Every activity heartbeats while it
 * runs (worker/activity-errors.ts), so a killed worker is noticed within a minute.
 */
export const SERVICE_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
};

/**
 * One batch of orders (read, compare, push up to batchSize orders, record): heartbeating, so a dead worker is
 * noticed within a minute; a retried batch counts and skips what it had already pushed.
 */
export const ORDER_ACTIVITY_OPTIONS: ActivityOptions = {
  ...SERVICE_ACTIVITY_OPTIONS,
  startToCloseTimeout: '30 minutes',
};

/**
 * Local store work (DuckDB loads, snapshot, bookkeeping). Retried for a lock held by a reader. Heartbeating
 * (worker/activity-errors.ts): a worker killed inside a load is noticed within a minute, and the retry on
 * another worker finds the store as the killed transaction left it (rolled back by DuckDB's WAL).
 */
export const STORE_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '20 minutes',
  heartbeatTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...NON_RETRYABLE_ERROR_TYPES],
  },
};

/** Which group each activity belongs to. */
export const ACTIVITY_GROUPS = {
  fetchAndLoad: 'report',
  windowsDone: 'store',
  markWindowDone: 'store',
  ingestEvents: 'store',
  enrich: 'service',
  computeRatios: 'store',
  deliverNotices: 'service',
  publishSnapshot: 'store',
  recordRun: 'store',
  maintainStore: 'store',
  sendDigest: 'service',
  listSubscriptions: 'service',
  createSubscription: 'service',
  updateSubscription: 'service',
  deleteSubscription: 'service',
  pushOrderBatch: 'orders',
} as const satisfies Record<keyof Activities, 'report' | 'service' | 'store' | 'orders'>;
