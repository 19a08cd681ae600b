-- 0003: reserved for a migration of another branch (placeholder so that the
-- numbers run without gaps; dropped when that branch's migration is merged).
SELECT 1;
