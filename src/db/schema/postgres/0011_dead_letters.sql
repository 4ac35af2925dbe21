-- Dead letters, sends of unknown outcome and queue names are listed and paged in (time, id) and
-- name order, which must be SQLite's: bytewise ("C"), whatever locale the database was made with.
-- Under a locale, 'a' sorts before 'B', so a page's keyset would skip or repeat entries compared
-- with the same call on the home.
ALTER TABLE delivery_queue_entries
  ALTER COLUMN queue_name TYPE TEXT COLLATE "C",
  ALTER COLUMN id TYPE TEXT COLLATE "C";
