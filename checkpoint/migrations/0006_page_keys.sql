-- 0006: the keys of a committed page's rows, recorded with its checkpoint
-- so that a full pass knows every key it saw (docs/deletions.md). NULL: the
-- page's keys were not recorded.

ALTER TABLE pages ADD COLUMN keys BLOB;
