-- The digest of each stored explanation (of its columns level .. certainty_note, as the evaluation wrote them).
-- An evaluation compares the explanations it makes with the
-- digests stored and writes only the rows whose explanation changed, instead of staging every row of the series it
-- judged to compare them in SQL (tens of thousands in a full evaluation, nearly all the same as before). A row without
-- one (stored before this column) is written again by the next evaluation that judges it.
ALTER TABLE ratio_explanations ADD COLUMN IF NOT EXISTS digest VARCHAR;

-- The digest of the events the TC40 reports are read from (sql/views/40_ratios.sql int_tc40__events: a sum of row
-- hashes, and their count) when the TC40 fingerprints kept in ratio_input_marks were computed. While the events' digest
-- is the same, the evaluation reads those fingerprints instead of parsing every event's JSON again (most of
-- the time of the fingerprints, when nothing changed). NULL: not known (computed the next time).
ALTER TABLE ratio_input_logic ADD COLUMN IF NOT EXISTS tc40_events VARCHAR;
