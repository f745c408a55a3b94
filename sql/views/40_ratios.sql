-- Chargeback ratios per mid x network x program x metric x UTC month (docs/ratios.md says what is counted).
-- Layers: int_mid_stats__monthly (calendar-month windows of the MID report) and the numerators from the
-- chargeback report and the events (int_chargebacks__monthly, int_tc40__monthly), then ratio_inputs_between
-- (one long row per program-metric), then the ratio rows (ratios, plus run-rate projections of open months) the judge
-- reads (43_ratio_judge.sql).
-- Ratios are DOUBLE quotients of exact counts and amounts, never rounded; no ratio is ever faked as 0:
-- no_ratio_reason says why one is missing.

-- The MID report's figures per calendar month: windows starting on the 1st and ending inside that month.
-- A window ending before the month's last day is month-to-date (is_partial); of several windows of one
-- month the longest (then the latest seen) wins.
-- Every layer is a table macro over a range of months (first_day .. last_day: the 1st of the first and of the
-- last month), so that a refresh computes only the months that changed: the bounds reach the scans of mid_stats,
-- chargebacks and the events. The views of the same names are the macros over every month.
CREATE OR REPLACE MACRO ratio_stats_between(first_day, last_day) AS TABLE
WITH w AS (
  SELECT
    mid, network,
    (year(window_start) * 12 + month(window_start) - 1)::INTEGER AS month_idx,
    -- Later window_end first, then later seen_at, then the row stored later (rowid): one number, unique in the table
    -- ((days * 1e10 + epoch seconds) * 2^64 + rowid), so that every field below comes from the same row.
    (datediff('day', DATE '1970-01-01', window_end)::BIGINT * 10000000000 + epoch(seen_at)::BIGINT)::HUGEINT * 18446744073709551616
      + rowid AS pick,
    window_start, window_end, chargeback_count, chargeback_amount, transaction_count, transaction_amount,
    previous_month_transaction_count, previous_month_transaction_amount
  FROM mid_stats
  WHERE network <> 'all'
    AND day(window_start) = 1
    AND window_end >= window_start
    AND window_end <= last_day(window_start)
    AND window_start >= first_day AND window_start <= last_day
), best AS (
  -- Each field of the picked row on its own (arg_max_null: a NULL of that row is kept, where arg_max would take another
  -- row's value). Fixed-size states: one arg_max of a STRUCT of the fields could not spill, so mart_ratios over a
  -- large store did not fit the store's memory limit.
  SELECT mid, network, month_idx,
    arg_max_null(window_start, pick) AS window_start, arg_max_null(window_end, pick) AS window_end,
    arg_max_null(chargeback_count, pick) AS chargeback_count, arg_max_null(chargeback_amount, pick) AS chargeback_amount,
    arg_max_null(transaction_count, pick) AS transaction_count, arg_max_null(transaction_amount, pick) AS transaction_amount,
    arg_max_null(previous_month_transaction_count, pick) AS previous_month_transaction_count,
    arg_max_null(previous_month_transaction_amount, pick) AS previous_month_transaction_amount
  FROM w
  GROUP BY mid, network, month_idx
)
SELECT
  mid, network,
  strftime(window_start, '%Y-%m') AS month,
  month_idx,
  window_start, window_end,
  (datediff('day', window_start, window_end) + 1)::INTEGER AS days_covered,
  day(last_day(window_start))::INTEGER AS days_in_month,
  window_end < last_day(window_start) AS is_partial,
  chargeback_count, chargeback_amount, transaction_count, transaction_amount,
  previous_month_transaction_count, previous_month_transaction_amount
FROM best;

CREATE OR REPLACE VIEW int_mid_stats__monthly AS SELECT * FROM ratio_stats_between(DATE '0001-01-01', DATE '9999-12-01');

-- Disputes resolved through RDR: an accepted RDR case refunds the cardholder before a chargeback is filed;
-- where the chargeback report still lists the case (same ARN), VAMP leaves it out.
CREATE OR REPLACE VIEW int_rdr__accepted_arns AS
SELECT DISTINCT payload->>'arn' AS arn
FROM events_raw
WHERE event_type IN ('rdr.new', 'rdr.match')
  AND lower(coalesce(payload->>'rdr_resolution', '')) = 'accepted'
  AND coalesce(payload->>'arn', '') <> '';

-- Each chargeback with what the ratios count of it: a fraud reason (EFM: 4837, 4863), and whether an accepted RDR case
-- resolved it (VAMP leaves it out). One definition for the monthly numerators, the forecast's days and the fingerprints.
CREATE OR REPLACE VIEW int_chargebacks__counted AS
SELECT c.*, c.reason_code IN ('4837', '4863') AS is_fraud, r.arn IS NOT NULL AS rdr_resolved
FROM chargebacks c
LEFT JOIN int_rdr__accepted_arns r ON r.arn = nullif(c.arn, '');

-- The chargeback report per mid x network x month received ("M" is the month the acquirer received it).
CREATE OR REPLACE MACRO ratio_chargebacks_between(first_day, last_day) AS TABLE
SELECT
  c.mid,
  c.card_type AS network,
  strftime(c.date_received, '%Y-%m') AS month,
  count(*) AS chargeback_count,
  sum(c.amount) AS chargeback_amount,
  count(*) FILTER (WHERE c.is_fraud) AS fraud_count,
  coalesce(sum(c.amount) FILTER (WHERE c.is_fraud), 0) AS fraud_amount,
  count(*) FILTER (WHERE NOT c.rdr_resolved) AS vamp_dispute_count,
  coalesce(sum(c.amount) FILTER (WHERE NOT c.rdr_resolved), 0) AS vamp_dispute_amount,
  count(*) FILTER (WHERE c.rdr_resolved) AS rdr_resolved_count
FROM int_chargebacks__counted c
WHERE c.date_received IS NOT NULL AND c.card_type IS NOT NULL
  AND c.date_received >= first_day::TIMESTAMP AND c.date_received < (last_day + INTERVAL 1 MONTH)::TIMESTAMP
GROUP BY ALL;

CREATE OR REPLACE VIEW int_chargebacks__monthly AS SELECT * FROM ratio_chargebacks_between(DATE '0001-01-01', DATE '9999-12-01');

-- The events TC40 fraud reports are read from: prevention.new and prevention.match, as received. Every column of
-- events_raw a report may depend on is here (not the journal's segment and line): store/source-marks.ts sourceMarksOf digests
-- these rows, and keeps the TC40 reports' fingerprints while the digest stays the same.
CREATE OR REPLACE VIEW int_tc40__events AS
SELECT event_guid, event_type, event_timestamp, received_at, payload
FROM events_raw
WHERE event_type IN ('prevention.new', 'prevention.match');

-- TC40 fraud reports: prevention.new / prevention.match events of type tc40, one per prevention_guid
-- (a .match repeats its .new), in the month of prevention_timestamp. Read from events_raw so a report
-- counts whichever of the two events arrived.
CREATE OR REPLACE VIEW int_tc40__reports AS
WITH raw AS (
  -- Every field read in one pass over the payload (a ->> each parsed the JSON text again).
  SELECT json_extract_string(payload, ['$.prevention_guid', '$.mid', '$.prevention_timestamp', '$.amount', '$.prevention_type']) AS f,
         event_timestamp
  FROM int_tc40__events
), e AS (
  SELECT
    f[1] AS prevention_guid,
    nullif(f[2], '') AS mid,
    -- UTC whatever the reader's TimeZone (stg_utc_timestamp, sql/views/10_stg_events.sql).
    stg_utc_timestamp(f[3]) AS prevention_timestamp,
    try_cast(f[4] AS DECIMAL(18, 4)) AS amount,
    event_timestamp
  FROM raw
  WHERE lower(coalesce(f[5], '')) = 'tc40'
    AND coalesce(f[1], '') <> ''
)
SELECT
  prevention_guid,
  max(mid) AS mid,
  min(prevention_timestamp) AS prevention_timestamp,
  max(amount) AS amount
FROM e
GROUP BY prevention_guid;

CREATE OR REPLACE MACRO ratio_tc40_between(first_day, last_day) AS TABLE
SELECT mid, strftime(prevention_timestamp, '%Y-%m') AS month, count(*) AS tc40_count, coalesce(sum(amount), 0) AS tc40_amount
FROM int_tc40__reports
WHERE mid IS NOT NULL AND prevention_timestamp IS NOT NULL
  AND prevention_timestamp >= first_day::TIMESTAMP AND prevention_timestamp < (last_day + INTERVAL 1 MONTH)::TIMESTAMP
GROUP BY ALL;

CREATE OR REPLACE VIEW int_tc40__monthly AS SELECT * FROM ratio_tc40_between(DATE '0001-01-01', DATE '9999-12-01');

-- Everything a ratio row of any program reads, one row per mid x network x month: the month's figures (its best
-- window), the previous month's transactions (counted only when its own window was complete) and the numerators.
-- Kept per month in ratio_month_inputs (store/ratio-inputs.ts): only the months whose sources changed are computed
-- again, and what the judge reads from there is these rows exactly.
-- tc40 names the table or view the TC40 counts are read from (ratio_tc40_between's rows; default int_tc40__monthly):
-- the refresh computes them once into a temp table for all its statements, where each would parse every TC40 event
-- again (the reports are one per prevention_guid, found before their month is known).
CREATE OR REPLACE MACRO ratio_month_inputs_between(first_day, last_day, tc40 := 'int_tc40__monthly') AS TABLE
-- The months asked for (cur) and each one's month before (p: Mastercard's and Discover's denominators), two calls and
-- not one CTE read twice: each keeps the caller's filters (a batch's MID range) in its scan of mid_stats. (A CTE's NOT
-- MATERIALIZED is lost when DuckDB stores the macro.)
SELECT
  cur.mid, cur.network, cur.month, cur.month_idx,
  strftime(cur.window_start - INTERVAL 1 MONTH, '%Y-%m') AS prev_month,
  cur.window_start, cur.window_end, cur.days_covered, cur.days_in_month, cur.is_partial,
  cur.chargeback_count, cur.chargeback_amount, cur.transaction_count, cur.transaction_amount,
  cur.previous_month_transaction_count, cur.previous_month_transaction_amount,
  -- The previous month counts only when its own window was complete.
  CASE WHEN NOT p.is_partial THEN p.transaction_count END AS prev_transaction_count,
  CASE WHEN NOT p.is_partial THEN p.transaction_amount END AS prev_transaction_amount,
  coalesce(cb.fraud_count, 0) AS fraud_count,
  coalesce(cb.fraud_amount, 0) AS fraud_amount,
  -- VAMP's disputes are never fewer than the MID report's chargebacks less those RDR resolved: where the MID report lists
  -- cases the chargeback report does not (a report not loaded, or loaded for part of the month), its count is a floor.
  greatest(coalesce(cb.vamp_dispute_count, 0), coalesce(cur.chargeback_count, 0) - coalesce(cb.rdr_resolved_count, 0)) AS vamp_dispute_count,
  coalesce(cb.vamp_dispute_amount, 0) AS vamp_dispute_amount,
  -- TC40s are Visa's: other networks get 0 (kept out of the join condition so it stays a hash join).
  CASE WHEN cur.network = 'visa' THEN coalesce(t.tc40_count, 0) ELSE 0 END AS tc40_count,
  CASE WHEN cur.network = 'visa' THEN coalesce(t.tc40_amount, 0) ELSE 0 END AS tc40_amount,
  coalesce(cur.chargeback_count, 0) - coalesce(cb.rdr_resolved_count, 0) > coalesce(cb.vamp_dispute_count, 0) AS vamp_floor,
  coalesce(cb.chargeback_count, 0) AS report_chargeback_count
FROM ratio_stats_between(first_day, last_day) cur
LEFT JOIN ratio_stats_between((first_day - INTERVAL 1 MONTH)::DATE, (last_day - INTERVAL 1 MONTH)::DATE) p
  ON p.mid = cur.mid AND p.network = cur.network AND p.month_idx = cur.month_idx - 1
LEFT JOIN ratio_chargebacks_between(first_day, last_day) cb ON cb.mid = cur.mid AND cb.network = cur.network AND cb.month = cur.month
LEFT JOIN (SELECT * FROM query_table(tc40) WHERE month >= strftime(first_day, '%Y-%m') AND month <= strftime(last_day, '%Y-%m')) t
  ON t.mid = cur.mid AND t.month = cur.month;

-- What each program counts, one definition for the long rows below. Arguments are the count columns of a month's
-- inputs or the amount columns, for the metric.
-- The denominator is the previous month's transactions (Mastercard's ECP and EFM, Discover).
CREATE OR REPLACE MACRO ratio_den_prev(program) AS (program IN ('ecp', 'efm', 'discover_excessive'));

-- The numerator: VAMP counts TC40 fraud reports + disputes (chargeback report, RDR-resolved left out); VFMP (retired)
-- fraud (TC40) over sales; EFM fraud chargebacks (4837, 4863); every other program the chargebacks.
CREATE OR REPLACE MACRO ratio_numerator(program, chargebacks, fraud, tc40, vamp_disputes) AS (
  CASE program WHEN 'vamp' THEN tc40 + vamp_disputes WHEN 'vfmp' THEN tc40 WHEN 'efm' THEN fraud ELSE chargebacks END
);

-- The denominator: the month's transactions; for a previous-month program, Mastercard's record's previous-month
-- fields first, then M-1's own report (its figures only when its window was complete), Discover M-1's report.
CREATE OR REPLACE MACRO ratio_denominator(program, network, month_tx, reported_prev_tx, prev_month_tx) AS (
  CASE WHEN NOT ratio_den_prev(program) THEN month_tx
       WHEN network = 'mastercard' THEN coalesce(reported_prev_tx, prev_month_tx)
       ELSE prev_month_tx END
);

-- Each program-metric as data (network NULL: every network).
CREATE OR REPLACE VIEW ratio_programs AS
SELECT network, program, metric FROM (VALUES
    (NULL, 'monthly', 'count'),
    (NULL, 'monthly', 'amount'),
    ('american_express', 'amex_excessive', 'count'),
    ('visa', 'vdmp', 'count'),
    ('visa', 'vamp', 'count'),
    ('visa', 'vfmp', 'amount'),
    ('mastercard', 'ecp', 'count'),
    ('mastercard', 'ecp', 'amount'),
    ('mastercard', 'efm', 'count'),
    ('discover', 'discover_excessive', 'count')
) p(network, program, metric);

-- One long row per mid x network x program x metric x month, before division. cached := TRUE reads month inputs kept
-- in a table (kept, default ratio_month_inputs: as fresh as store/ratio-inputs.ts refreshRatioInputs last made them)
-- instead of computing them from the sources; the branch not taken is not run.
CREATE OR REPLACE MACRO ratio_inputs_between(first_day, last_day, cached := FALSE, kept := 'ratio_month_inputs') AS TABLE
WITH j AS (
  SELECT * FROM ratio_month_inputs_between(first_day, last_day) WHERE NOT cached
  UNION ALL BY NAME
  SELECT * FROM query_table(kept)
   WHERE cached
     AND month_idx >= (year(first_day) * 12 + month(first_day) - 1)::INTEGER
     AND month_idx <= (year(last_day) * 12 + month(last_day) - 1)::INTEGER
), prog AS (
  SELECT
    j.mid, j.network, p.program, p.metric, j.month,
    ratio_numerator(p.program, chargeback_count, fraud_count, tc40_count, vamp_dispute_count)::DOUBLE AS num_count,
    ratio_numerator(p.program, chargeback_amount, fraud_amount, tc40_amount, vamp_dispute_amount)::DOUBLE AS num_amount,
    ratio_denominator(p.program, j.network, transaction_count, previous_month_transaction_count, prev_transaction_count)::DOUBLE AS den_count,
    ratio_denominator(p.program, j.network, transaction_amount, previous_month_transaction_amount, prev_transaction_amount)::DOUBLE AS den_amount,
    CASE WHEN ratio_den_prev(p.program) THEN prev_month ELSE month END AS den_month,
    NOT ratio_den_prev(p.program) AS den_same_month,
    -- Transactions of M itself (Discover's "100 net sales" is of the chargebacks' month).
    transaction_count::DOUBLE AS month_tx_count,
    transaction_amount::DOUBLE AS month_tx_amount,
    is_partial, days_covered, days_in_month,
    -- The chargeback report's count of M against the MID report's (ratio_rows_covered_between's missing_sources).
    report_chargeback_count::DOUBLE AS report_chargeback_count, chargeback_count::DOUBLE AS mid_report_chargeback_count,
    p.program = 'vamp' AND coalesce(vamp_floor, FALSE) AS numerator_floor
  FROM j
  JOIN ratio_programs p ON p.network IS NULL OR p.network = j.network
)
SELECT
  *,
  CASE
    WHEN (CASE WHEN metric = 'count' THEN den_count ELSE den_amount END) IS NULL
      THEN CASE WHEN den_same_month THEN 'no_transaction_figures' ELSE 'no_previous_month' END
    WHEN (CASE WHEN metric = 'count' THEN den_count ELSE den_amount END) = 0
      THEN CASE WHEN den_same_month THEN 'zero_transactions' ELSE 'zero_transactions_previous_month' END
  END AS no_ratio_reason
FROM prog;

-- The ratios. Observed rows (is_projection = false; month-to-date when is_partial) and, for each open
-- month, a projection to month end from the run rate (numerators, and same-month denominators, times
-- days_in_month / days_covered). A projection is labelled as one and never replaces an observed row.
CREATE OR REPLACE MACRO ratio_projected(is_partial, days_covered) AS (is_partial AND days_covered > 0);
CREATE OR REPLACE MACRO ratio_rows_between(first_day, last_day, cached := FALSE, kept := 'ratio_month_inputs') AS TABLE
WITH obs AS (
  SELECT i.*, v.is_projection,
    CASE WHEN v.is_projection THEN days_in_month::DOUBLE / days_covered::DOUBLE ELSE 1.0::DOUBLE END AS factor
  FROM ratio_inputs_between(first_day, last_day, cached := cached, kept := kept) i
  JOIN (VALUES (FALSE), (TRUE)) v(is_projection) ON NOT v.is_projection OR ratio_projected(i.is_partial, i.days_covered)
), scaled AS (
  SELECT
    mid, network, program, metric, month, den_month AS denominator_month,
    num_count * factor AS numerator_count,
    num_amount * factor AS numerator_amount,
    CASE WHEN den_same_month THEN den_count * factor ELSE den_count END AS denominator_count,
    CASE WHEN den_same_month THEN den_amount * factor ELSE den_amount END AS denominator_amount,
    month_tx_count * factor AS month_transaction_count,
    month_tx_amount * factor AS month_transaction_amount,
    no_ratio_reason, is_projection, is_partial, days_covered, days_in_month,
    report_chargeback_count, mid_report_chargeback_count, numerator_floor
  FROM obs
), nd AS (
  SELECT *,
    CASE WHEN metric = 'count' THEN numerator_count ELSE numerator_amount END AS numerator,
    CASE WHEN metric = 'count' THEN denominator_count ELSE denominator_amount END AS denominator
  FROM scaled
)
SELECT
  nd.mid, nd.network, nd.program, nd.metric, nd.month, numerator, denominator, denominator_month,
  CASE WHEN no_ratio_reason IS NULL THEN numerator / denominator END AS ratio,
  CASE WHEN no_ratio_reason IS NULL THEN numerator / denominator * 100 END AS ratio_pct,
  CASE WHEN no_ratio_reason IS NULL THEN numerator / denominator * 10000 END AS ratio_bps,
  no_ratio_reason, nd.is_projection, is_partial, days_covered, days_in_month,
  numerator_count, numerator_amount, denominator_count, denominator_amount,
  month_transaction_count, month_transaction_amount,
  report_chargeback_count, mid_report_chargeback_count, numerator_floor
FROM nd;

-- The days of each month the chargeback report is loaded for, from the 1st on without a gap: covered_to, the last such
-- day. A fetch counts up to the day before the service's clock at its answer (store/windows.ts coverageSpans' rule), a
-- window recorded as done and a file loaded by hand with a window (`cbp load`) for the whole window.
CREATE OR REPLACE VIEW int_chargeback_coverage AS
WITH spans AS (
  SELECT window_start AS s, least(window_end, service_time::DATE - 1) AS e FROM report_fetches WHERE kind = 'chargebacks'
  UNION ALL
  SELECT window_start, window_end FROM windows_done WHERE kind = 'chargebacks'
  UNION ALL
  SELECT window_start, window_end FROM loads
   WHERE kind = 'chargebacks' AND window_start IS NOT NULL AND window_end IS NOT NULL
     AND regexp_matches(landing_file, 'import-[0-9a-f]{12}[.](json|csv)$')
), days AS (
  SELECT DISTINCT unnest(generate_series(s::TIMESTAMP, e::TIMESTAMP, INTERVAL 1 DAY))::DATE AS d FROM spans WHERE e >= s
), runs AS (
  SELECT d, strftime(d, '%Y-%m') AS month, day(d) = row_number() OVER (PARTITION BY strftime(d, '%Y-%m') ORDER BY d) AS from_first FROM days
)
SELECT month, max(d) AS covered_to FROM runs WHERE from_first GROUP BY month;

-- The ratio rows of a range of months with their TC40 coverage: events (TC40 fraud reports among them) are
-- captured from the first event on, dated by the service's own clock (its event_timestamp; received_at when the
-- event carried none), as windows are judged done by the service's Date: a sandbox or a service whose clock is
-- not the receiver's gives the same coverage. A VAMP / VFMP month starting before that counts disputes alone, a
-- partial numerator.
-- missing_sources names what a row's figures need that is not loaded for its month, and what to run (docs/ratios.md
-- "Unknown"): the chargeback report over the MID report's window (VAMP's disputes, EFM's fraud), the TC40 reports
-- (VAMP, VFMP), M-1's complete MID report (a previous-month denominator), the network's transactions, or the two
-- reports' counts disagreeing so that the numerator may be understated (by more than 5 cases and 10 % of the larger).
CREATE OR REPLACE MACRO ratio_rows_covered_between(first_day, last_day, cached := FALSE, kept := 'ratio_month_inputs') AS TABLE
WITH r AS (
  SELECT nd.*, cap.tc40_observed_from,
    NOT (nd.network = 'visa' AND nd.program IN ('vamp', 'vfmp'))
      OR coalesce(cap.tc40_observed_from <= strptime(nd.month || '-01', '%Y-%m-%d')::DATE, FALSE) AS numerator_complete,
    (strptime(nd.month || '-01', '%Y-%m-%d') + to_days(greatest(nd.days_covered, 1) - 1))::DATE AS window_end,
    cov.covered_to
  FROM ratio_rows_between(first_day, last_day, cached := cached, kept := kept) nd
  CROSS JOIN (SELECT min(coalesce(event_timestamp, received_at))::DATE AS tc40_observed_from FROM events_raw) cap
  LEFT JOIN int_chargeback_coverage cov ON cov.month = nd.month
), rn AS (
  -- The day the chargeback report must reach: the MID report window's end, or the day before when the MID report was
  -- fetched on that day (the service's day in progress, which no chargeback fetch covers yet).
  SELECT r.*, CASE WHEN f.window_end IS NOT NULL THEN r.window_end - 1 ELSE r.window_end END AS need_to
  FROM r LEFT JOIN (SELECT DISTINCT window_end, TRUE AS partial FROM report_fetches WHERE kind = 'mid_report' AND window_end = service_time::DATE) f
    ON f.partial = r.is_partial AND f.window_end = r.window_end
)
SELECT r.* EXCLUDE (report_chargeback_count, mid_report_chargeback_count, numerator_floor, window_end, covered_to, need_to),
  nullif(concat_ws('; ',
    CASE WHEN program IN ('vamp', 'efm') AND strftime(need_to, '%Y-%m') = month AND (covered_to IS NULL OR covered_to < need_to)
      THEN 'chargeback report not loaded for ' || strftime(need_to, '%Y-%m-%d') || coalesce(' (loaded to ' || strftime(covered_to, '%Y-%m-%d') || ')', '')
           || ': cbp run backfill --kinds chargebacks --from ' || month || '-01 --to ' || strftime(need_to, '%Y-%m-%d')
           || ' (or cbp load chargebacks FILE --from ' || month || '-01 --to ' || strftime(need_to, '%Y-%m-%d') || ')' END,
    CASE WHEN NOT numerator_complete
      THEN 'TC40 reports not captured before ' || coalesce(strftime(tc40_observed_from, '%Y-%m-%d'), 'the first event')
           || ': they arrive as prevention events only (cbp run subscriptions, then cbp run ingest)' END,
    CASE WHEN no_ratio_reason = 'no_previous_month'
      THEN 'MID report for ' || denominator_month || ' not loaded as a complete month: cbp run backfill --kinds mid_report --from '
           || denominator_month || '-01 --to ' || strftime(last_day(strptime(denominator_month || '-01', '%Y-%m-%d')), '%Y-%m-%d')
           || ' (or cbp load mid_report FILE --from ' || denominator_month || '-01 --to '
           || strftime(last_day(strptime(denominator_month || '-01', '%Y-%m-%d')), '%Y-%m-%d') || ')' END,
    CASE WHEN no_ratio_reason = 'no_transaction_figures'
      THEN 'MID report for ' || month || ' has no transaction figures for ' || network || ': cbp run backfill --kinds mid_report --from '
           || month || '-01 --to ' || strftime(window_end, '%Y-%m-%d') || ' --force' END,
    CASE WHEN covered_to >= need_to AND abs(report_chargeback_count - mid_report_chargeback_count) > greatest(5, 0.1 * greatest(report_chargeback_count, mid_report_chargeback_count))
          AND ((program NOT IN ('vamp', 'vfmp', 'efm') AND report_chargeback_count > mid_report_chargeback_count)
               OR (program = 'efm' AND report_chargeback_count < mid_report_chargeback_count))
      THEN 'chargeback counts disagree (chargeback report ' || cbp_figure(report_chargeback_count) || ', MID report '
           || cbp_figure(mid_report_chargeback_count) || '): cbp run backfill --kinds chargebacks,mid_report --from ' || month
           || '-01 --to ' || strftime(window_end, '%Y-%m-%d') || ' --force' END), '') AS missing_sources,
  numerator_floor
FROM rn r;
