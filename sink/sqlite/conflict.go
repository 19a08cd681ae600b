package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// checkConflictClauses refuses a table whose CREATE TABLE statement gives
// a column or table constraint the conflict resolution IGNORE or REPLACE
// (v TEXT NOT NULL ON CONFLICT IGNORE, UNIQUE (v) ON CONFLICT REPLACE).
// SQLite applies it to every write that breaks the constraint, the
// upsert's included, with no error and no trigger: IGNORE drops the
// record's row, REPLACE stores a column's default instead of a NULL or
// deletes the other live row holding the value, and the statement's
// change count cannot tell (docs/job-file.md, "target"). SQLite exposes
// the clause only in the statement's text, so it is read from there.
func (s *Sink) checkConflictClauses(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	op := "prepare table " + t.String()
	var ddl sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE`, t.Name).Scan(&ddl)
	if errors.Is(err, sql.ErrNoRows) || !ddl.Valid {
		return nil
	}
	if err != nil {
		return s.wrap(op, err)
	}
	what, clause, ok := conflictClause(ddl.String)
	if !ok {
		return nil
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("%s: %s has ON CONFLICT %s: SQLite then %s without an error, so the table would not hold what the source does",
			op, what, clause, map[string]string{"IGNORE": "skips the row written", "REPLACE": "stores a default or deletes the other row"}[clause]),
		Hint: "recreate the table without the ON CONFLICT clause (a constraint the source breaks then fails the run, naming it)",
	}
}

// conflictClause finds, in a CREATE TABLE statement, the first column or
// table constraint with ON CONFLICT IGNORE or REPLACE: what names it (column
// "v", or constraint one_v, or the table constraint as written up to its
// clause) and clause is IGNORE or REPLACE. String literals, quoted names
// and comments are read as single tokens, never as words.
func conflictClause(ddl string) (what, clause string, ok bool) {
	toks := sqlTokens(ddl)
	depth, start := 0, -1
	for i, tok := range toks {
		switch tok {
		case "(":
			depth++
			if depth == 1 {
				start = i + 1
			}
			continue
		case ")":
			depth--
			continue
		case ",":
			if depth == 1 {
				start = i + 1
			}
			continue
		}
		if depth != 1 || i+2 >= len(toks) || !strings.EqualFold(tok, "ON") || !strings.EqualFold(toks[i+1], "CONFLICT") {
			continue
		}
		c := strings.ToUpper(toks[i+2])
		if c != "IGNORE" && c != "REPLACE" {
			continue
		}
		def := toks[start:i]
		if len(def) == 0 {
			continue
		}
		switch first := strings.ToUpper(def[0]); first {
		case "CONSTRAINT":
			return "constraint " + unquote(def[1]), c, true
		case "PRIMARY", "UNIQUE", "CHECK", "FOREIGN":
			return "table constraint " + strings.Join(def, " "), c, true
		default:
			if len(def) > 2 {
				for j := 1; j+1 < len(def); j++ {
					if strings.EqualFold(def[j], "CONSTRAINT") {
						return fmt.Sprintf("column %q (constraint %s)", unquote(def[0]), unquote(def[j+1])), c, true
					}
				}
			}
			return fmt.Sprintf("column %q", unquote(def[0])), c, true
		}
	}
	return "", "", false
}

// sqlTokens splits SQL text into words, quoted names and literals (each one
// token, quotes kept), and the punctuation ( ) , as tokens of their own;
// comments and other punctuation are left out.
func sqlTokens(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += end + 4
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for j < len(s) {
				if s[j] == closer {
					if closer != ']' && j+1 < len(s) && s[j+1] == closer {
						j += 2 // a doubled quote
						continue
					}
					break
				}
				j++
			}
			toks = append(toks, s[i:min(j+1, len(s))])
			i = j + 1
		case c == '(' || c == ')' || c == ',':
			toks = append(toks, string(c))
			i++
		case c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 0x80) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			i++
		}
	}
	return toks
}

// unquote removes the quotes of a quoted SQL name.
func unquote(tok string) string {
	if len(tok) >= 2 {
		switch tok[0] {
		case '"', '`':
			q := string(tok[0])
			return strings.ReplaceAll(tok[1:len(tok)-1], q+q, q)
		case '[':
			return tok[1 : len(tok)-1]
		}
	}
	return tok
}
