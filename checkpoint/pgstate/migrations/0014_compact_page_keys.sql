-- 0014: pages.keys is written in the compact format, as the SQLite
-- state's migration 0030 (format byte 2, checkpoint/keylist;
-- docs/deletions.md, "In the state file"). No column changes and the
-- lists written before stay readable; the number is what keeps an older
-- idemsync, which cannot read the new lists, from using the state (it is
-- refused as written by a newer idemsync) instead of failing at the end of
-- a full pass.
SELECT 1;
