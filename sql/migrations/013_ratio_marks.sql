-- What the last alert evaluation saw (issue #13: a nightly evaluates only the months its loads touched). Each
-- source's rows per month are summed into a fingerprint: a month whose
-- fingerprint differs from the one kept here was touched since (a load, a re-fetch revising an old month, an
-- event, a row removed), whoever wrote it. ratio_evaluations keeps the rule set's hash and the month evaluated
-- up to: other rules, or no evaluation yet, mean every month is evaluated.
CREATE TABLE IF NOT EXISTS ratio_source_marks (
  source VARCHAR NOT NULL,      -- mid_stats | chargebacks | tc40
  month VARCHAR NOT NULL,       -- YYYY-MM: the window's, date_received's, prevention_timestamp's
  fingerprint VARCHAR NOT NULL, -- sum of the rows' hashes, as text
  row_count BIGINT NOT NULL,
  PRIMARY KEY (source, month)
);

CREATE TABLE IF NOT EXISTS ratio_evaluations (
  evaluated_at TIMESTAMP NOT NULL,
  as_of_month VARCHAR NOT NULL,
  rules_hash VARCHAR NOT NULL,
  first_month VARCHAR           -- first month judged (NULL: every month)
);
