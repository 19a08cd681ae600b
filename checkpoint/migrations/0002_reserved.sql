-- 0002: reserved (another branch's migration takes this number at merge).
SELECT 1;
