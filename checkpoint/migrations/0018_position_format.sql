-- 0018: the format of the positions this state file holds (runs.checkpoint,
-- runs.last_pos, pages.position, pages.next): from here on idemsync writes
-- format 2, where a position says its pagination style and keeps the
-- windows in flight as JSON, not as a JSON string inside the JSON
-- (docs/architecture.md, "Positions"). A build that does not know this
-- migration refuses the file as written by a newer idemsync before it reads
-- a position it would misread. Positions already stored stay in format 1:
-- every build from this one on reads both, and each page committed
-- writes format 2.

CREATE TABLE formats (
    name    TEXT PRIMARY KEY, -- the kind of value: position
    version INTEGER NOT NULL  -- the newest format of it the file may hold
) STRICT;

INSERT INTO formats (name, version) VALUES ('position', 2);
