-- Which line of which run each order's last push came from, and how it was pushed: a batch retried after it
-- failed halfway counts the orders it had already pushed as they were (not as "unchanged"), and an order
-- listed twice in one file counts once. Invalid file lines name the run that last read them, so a run's own
-- invalid lines can be listed after it.
ALTER TABLE order_pushes ADD COLUMN IF NOT EXISTS source_line INTEGER;   -- the line of the source the pushed state came from
ALTER TABLE order_pushes ADD COLUMN IF NOT EXISTS change VARCHAR;        -- new | changed | retried: how the last attempt was sent
ALTER TABLE order_rejects ADD COLUMN IF NOT EXISTS run_id VARCHAR;
