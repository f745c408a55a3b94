-- The store's identity (issue #10 review): a random id drawn once, when the store is created (or first
-- migrated to this version), kept beside its generation. A store started over (the file deleted, or another
-- file put in its place) begins again at generation 1, so a generation alone could call a snapshot of the
-- old store, at a higher generation, "up to date". COPY FROM DATABASE carries the id into the snapshot: the
-- snapshot is current only when its id is the store's AND its generation equals the store's (store/snapshot.ts).
-- A copy of the store (a backup put back) keeps the id: it is the same store, and its generation differs
-- from the snapshot's unless it is the very state the snapshot holds.
ALTER TABLE store_generation ADD COLUMN store_id VARCHAR;
UPDATE store_generation SET store_id = gen_random_uuid()::VARCHAR WHERE store_id IS NULL;
