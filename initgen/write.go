package initgen

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// Build writes the commented job file for the first page and
// returns it with a summary (style, records, key, columns, the decisions
// left open) for the command's output. It fails when the page holds no
// records to learn from.
func Build(p *Page, name string) (string, map[string]any, error) {
	records, arr, ok := findRecords(p.body)
	if !ok {
		return "", nil, &contract.Error{Class: contract.Permanent,
			Msg:  fmt.Sprintf("init: GET %s: no array of objects in the body", RedactQuery(p.url)),
			Hint: "init learns the columns from the records of the first page: use a URL whose first page lists some"}
	}
	recs := arr.Array()
	pg := detectPagination(p, records, recs)
	cols := detectColumns(recs)
	if len(cols) == 0 {
		where := "the body"
		if records != "" {
			where = records
		}
		return "", nil, &contract.Error{Class: contract.Permanent,
			Msg:  fmt.Sprintf("init: GET %s: the records of %s have no fields (every object on the first page is empty)", RedactQuery(p.url), where),
			Hint: "init learns the columns and the key from the first page's records: use a URL whose first page lists records with their fields"}
	}
	key, guessed := detectKey(recs, cols, name)
	decide := append(append([]string{}, pg.decide...), positionsKept(p, pg.owned)...)
	why := fmt.Sprintf("no id-like field is unique on the first page; %s is, there", key.name)
	if keyRank(strings.ReplaceAll(key.path, `\`, "")) == 2 {
		why = fmt.Sprintf("%s is unique on the first page but does not name these records: it may be another record's id, shared by many of them", key.name)
	}
	if guessed {
		decide = append(decide, fmt.Sprintf("target.key: %s: which fields identify a record?", why))
	}
	table := strings.ReplaceAll(name, "-", "_")
	if table == "" || table[0] >= '0' && table[0] <= '9' {
		table = "t_" + table
	}

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Job file written by `idemsync init` from one page of\n#   %s\n", RedactQuery(p.url))
	w("# Read the lines marked \"check\", then: idemsync validate FILE && idemsync run FILE\n")
	w("# Reference: docs/job-file.md; pagination styles: docs/pagination.md.\n")
	w("name: %s\n", yamlString(name))
	if len(decide) > 0 {
		w("# init could not decide what follows: validate and run refuse this file\n")
		w("# until each entry is settled in the file below and deleted from this list.\n")
		w("decide:\n")
		for _, d := range decide {
			w("  - %s\n", quoteDecision(d))
		}
	}
	w("source:\n")
	urlLine, vars := urlSecrets(p, pg.owned, name)
	w("  url: %s\n", urlLine)
	if len(vars) > 0 {
		w("  # The URL's password and credential parameters are read from the environment: set %s.\n", strings.Join(vars, ", "))
	}
	w("  # Credentials: add headers (Authorization: \"Bearer ${API_TOKEN}\") or auth:, never the secret itself.\n")
	if records == "" {
		w("  # The body is the array of records (%d on the first page).\n", len(recs))
	} else {
		w("  # The largest array of objects in the body: %d records on the first page.\n", len(recs))
		w("  records: %s\n", yamlString(records))
	}
	w("pagination:\n")
	w("  # %s.\n", commentText(strings.ToUpper(pg.why[:1])+pg.why[1:]))
	w("  style: %s\n", pg.style)
	for _, s := range pg.settings {
		line := fmt.Sprintf("  %s: %s", s.key, yamlValue(s.value))
		if s.open {
			line = strings.TrimSuffix(fmt.Sprintf("  # %s: %s", s.key, yamlValue(s.value)), " ")
		}
		if s.note != "" {
			line += "  # " + commentText(s.note)
		}
		w("%s\n", line)
	}
	w("target:\n")
	w("  # SQLite beside this file; for PostgreSQL: postgres://USER:${PGPASSWORD}@HOST:5432/DB\n")
	w("  url: sqlite:%s.db\n", name)
	w("  table: %s\n", yamlString(table))
	if guessed {
		w("  # key: [%s]  # decide: %s\n", yamlString(key.name), commentText(why))
	} else {
		w("  # %s identifies a record (unique on the first page).\n", key.name)
		w("  key: [%s]\n", yamlString(key.name))
	}
	w("  # One column per field of the records, typed from the first page's values\n")
	w("  # (check the types; mixed scalars are text, json holds objects and arrays).\n")
	w("  columns:\n")
	for _, c := range cols {
		w("    %s: {path: %s, type: %s}\n", c.name, yamlString(c.path), c.typ)
	}
	children := detectChildren(recs, cols, table) // children.go
	writeChildren(w, children)
	sum := map[string]any{"job": name, "style": pg.style, "records_path": records, "records": len(recs),
		"key": key.name, "key_guessed": guessed, "columns": len(cols), "decide": decide}
	if len(vars) > 0 {
		sum["variables"] = vars
	}
	if len(children) > 0 {
		sum["children"] = childNames(children)
	}
	return b.String(), sum, nil
}

// sourceURL is the page's URL without the query parameters the
// pagination sets itself, the others as given: decoded and encoded again,
// a parameter with a ';' would be dropped and "expand" become "expand=".
func sourceURL(p *Page, owned []string) string {
	u := *p.url
	if u.RawQuery == "" {
		return u.String()
	}
	var kept []string
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, _, _ := strings.Cut(part, "=")
		if name, err := url.QueryUnescape(k); err == nil && slices.Contains(owned, name) {
			continue
		}
		kept = append(kept, part)
	}
	u.RawQuery = strings.Join(kept, "&")
	return u.String()
}

var plainYAML = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./:?&=%+-]*$`)

// yamlString quotes s for YAML when it needs it, and doubles every $ so
// that ${...} in it is not taken for a variable.
func yamlString(s string) string {
	s = strings.ReplaceAll(s, "$", "$$")
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~":
		return strconv.Quote(s)
	}
	// A ':' ending a plain scalar starts a mapping value ("path: a:").
	if plainYAML.MatchString(s) && !strings.Contains(s, ": ") && !strings.HasSuffix(s, ":") && !strings.Contains(s, " #") {
		return s
	}
	return strconv.Quote(s)
}

// quoteDecision writes an entry of a decide: list: the loader expands
// ${VAR}s in every value, and a question quotes what the page or the
// description shows (a next cursor "${AWS_SECRET_ACCESS_KEY}"), which
// validate would print expanded.
func quoteDecision(s string) string {
	return strconv.Quote(strings.ReplaceAll(s, "$", "$$"))
}

// yamlValue writes a pagination value: numbers bare, the rest as yamlString.
func yamlValue(s string) string {
	if _, err := strconv.Atoi(s); err == nil {
		return s
	}
	return yamlString(s)
}
