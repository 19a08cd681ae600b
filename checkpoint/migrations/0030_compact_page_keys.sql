-- 0030: pages.keys is written in the compact format (format byte 2,
-- checkpoint/keylist: a consecutive integer id costs a byte, a key sharing
-- a prefix with the key before only its differing tail;
-- docs/deletions.md, "In the state file"). No column changes and the
-- lists written before stay readable; the number is what keeps an older
-- idemsync, which cannot read the new lists, from opening the file (it is
-- refused as written by a newer idemsync) instead of failing at the end of
-- a full pass.
SELECT 1;
