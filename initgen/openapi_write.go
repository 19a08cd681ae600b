package initgen

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
)

// BuildOpenAPI writes the commented resources file for the list
// operations of d that o selects (docs/job-file.md, "Starting from
// idemsync init"), and a summary for the command's output: the
// resources, their styles and the decisions left open.
func BuildOpenAPI(d *apiDoc, o OpenAPIOptions) (string, map[string]any, error) {
	ops := d.listOps()
	if err := d.tooMerged(); err != nil {
		return "", nil, err
	}
	if o.Path == "" && len(d.unresolved) > 0 { // a list operation it hides would be left out
		var at []string
		for p := range d.unresolved {
			at = append(at, p)
		}
		sort.Strings(at)
		return "", nil, d.unresolvedAt(at...)
	}
	if len(ops) == 0 {
		return "", nil, contract.Errorf(contract.Permanent, "init --openapi %s: no list operation (a GET answering an array of objects, directly or under a property)", d.from)
	}
	d.linkParents(ops)
	chosen := ops
	switch {
	case o.Path != "":
		chosen = nil
		for _, op := range ops {
			if op.path == o.Path {
				for p := op; p != nil; p = p.parent {
					chosen = append([]*listOp{p}, chosen...)
				}
			}
		}
		if err := d.unresolvedAt(o.Path); err != nil {
			return "", nil, err
		}
		if len(chosen) == 0 {
			return "", nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("init --openapi: %s is not a list operation of %s", o.Path, d.from), Hint: "the list operations: " + opPaths(ops)}
		}
	case !o.All && len(ops) > 1:
		return "", nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("init --openapi: %s has %d list operations: choose one with --path, or --all", d.from, len(ops)), Hint: "the list operations: " + opPaths(ops)}
	}
	name := o.Name
	if name == "" {
		name = d.name()
	}
	used := map[string]bool{}
	for _, op := range chosen {
		op.name = op.nameIn(used)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	info := mapOf(d.root["info"])
	w("# Job file written by `idemsync init --openapi` from %s\n", oneLine(str(info["title"])+" "+str(info["version"])))
	w("# (%s): one resource per list operation.\n", oneLine(d.from))
	w("# Every parameter name below is declared by the description; validate and\n")
	w("# run refuse the file while a decide: list has an entry. Reference: docs/job-file.md.\n")
	w("name: %s\n", yamlString(name))
	w("defaults:\n  source:\n")
	base, baseQ := d.baseURL()
	note := ""
	if baseQ != "" {
		note = "  # decide: a placeholder, see the decide: list" // which refuses the file until it goes
	}
	w("    base_url: %s%s\n", yamlString(base), note)
	auth, authDecide := d.opsAuth(chosen, name)
	w("%s", auth)
	w("  target:\n    url: sqlite:%s.db\n", name)
	var decisions []string
	if baseQ != "" {
		decisions = append(decisions, "defaults.source.base_url: "+baseQ)
	}
	if authDecide != "" {
		decisions = append(decisions, authDecide)
	}
	if len(decisions) > 0 {
		w("decide:\n")
		for _, q := range decisions {
			w("  - %s\n", quoteDecision(q))
		}
	}
	w("resources:\n")
	sum := map[string]any{"job": name, "resources": len(chosen)}
	styles := map[string]string{}
	for _, op := range chosen {
		d.at = op.path
		ds := d.writeResource(w, op)
		if err := d.unresolvedAt(op.path); err != nil { // a column it hides would be left out
			return "", nil, err
		}
		decisions = append(decisions, ds...)
		styles[op.name] = op.style
	}
	if err := d.tooMerged(); err != nil {
		return "", nil, err
	}
	sum["styles"], sum["decide"] = styles, append([]string{}, decisions...)
	return b.String(), sum, nil
}

func opPaths(ops []*listOp) string {
	var ps []string
	for _, op := range ops {
		ps = append(ps, op.path)
	}
	return strings.Join(ps, ", ")
}

// nameIn is the operation's resource name, unique among used.
func (op *listOp) nameIn(used map[string]bool) string {
	base := opName(op.path)
	n := base
	for i := 2; used[n]; i++ {
		n = base + "_" + strconv.Itoa(i)
	}
	used[n] = true
	return n
}

// baseURL is the first server's URL, its variables at their defaults,
// and the question left when there is none or it is relative: a made-up
// host would validate.
func (d *apiDoc) baseURL() (string, string) {
	servers := list(d.root["servers"])
	if len(servers) == 0 {
		return "https://api.example.com", "the description names no server: which URL serves the API?"
	}
	s := mapOf(servers[0])
	u := str(s["url"])
	for k, v := range mapOf(s["variables"]) {
		u = strings.ReplaceAll(u, "{"+k+"}", str(mapOf(v)["default"]))
	}
	u = strings.TrimSuffix(u, "/")
	pu, err := url.Parse(u)
	switch {
	case err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != "":
		return u, ""
	case err == nil && pu.Scheme == "" && pu.Host == "":
		sep := ""
		if u != "" && !strings.HasPrefix(u, "/") {
			sep = "/" // "v1" is "/v1" on the placeholder host
		}
		return "https://api.example.com" + sep + u, "the description's server is relative (" + u + "): which host serves it?"
	}
	// "ftp://x", "http00", "http://": written as is, base_url would be
	// refused for itself, not as a decision.
	return "https://api.example.com", "the description's server " + strconv.Quote(u) + " is no http(s) URL: which URL serves the API?"
}

// opsAuth is the auth of the chosen operations, written once in defaults:
// that of the ones with a security requirement (one that needs none takes
// it too: the same API), and a decision when they need different ones.
func (d *apiDoc) opsAuth(ops []*listOp, name string) (string, string) {
	auth, decide, from := "", "", ""
	for _, op := range ops {
		if !slices.ContainsFunc(op.security, func(req any) bool { return len(mapOf(req)) > 0 }) {
			continue // [], or [{}]: no credentials needed
		}
		a, q := d.auth(op.security, name)
		switch {
		case from == "":
			auth, decide, from = a, q, op.path
		case a != auth || q != decide:
			return "", fmt.Sprintf("source.auth: GET %s and GET %s require different security schemes, and defaults.source.auth is one: choose it, or source.auth per resource (docs/job-file.md#auth)", from, op.path)
		}
	}
	if from == "" {
		return d.auth(nil, name)
	}
	return auth, decide
}

// auth writes source.auth from the security scheme the operations
// require, its secrets as ${VAR} placeholders; a scheme idemsync has no
// auth for is a decision left open.
func (d *apiDoc) auth(security []any, name string) (string, string) {
	schemes := mapOf(mapOf(d.root["components"])["securitySchemes"])
	// Each requirement is enough by itself; the schemes one names are all
	// needed together, which source.auth does not send.
	var names, together []string
	for _, req := range security {
		switch m := mapOf(req); len(m) {
		case 1:
			for k := range m {
				names = append(names, k)
			}
		default:
			var all []string
			for k := range m {
				all = append(all, k)
			}
			sort.Strings(all)
			if len(all) > 1 && together == nil {
				together = all
			}
		}
	}
	sort.Strings(names)
	sort.SliceStable(names, func(i, j int) bool { // bearer first: it needs nothing encoded
		return str(mapOf(schemes[names[i]])["scheme"]) == "bearer" && str(mapOf(schemes[names[j]])["scheme"]) != "bearer"
	})
	env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if env[0] >= '0' && env[0] <= '9' {
		env = "_" + env // a variable's name starts with no digit: ${1_TOKEN} is refused
	}
	if len(names) == 0 && together != nil {
		return "", fmt.Sprintf("source.auth: the description's security requirement needs the schemes %s together, and source.auth sends one: choose source.auth and source.headers (docs/job-file.md#auth)", strings.Join(together, " and "))
	}
	if len(names) == 0 {
		return "    # No security requirement in the description: add source.auth if the API wants one.\n", ""
	}
	s := d.obj(schemes[names[0]])
	head := fmt.Sprintf("    # Security scheme %s of the description; the secrets come from the environment.\n", oneLine(names[0]))
	switch typ := str(s["type"]); {
	case typ == "http" && strings.EqualFold(str(s["scheme"]), "bearer"):
		return head + fmt.Sprintf("    auth: {type: bearer, token: \"${%s_TOKEN}\"}\n", env), ""
	case typ == "http" && strings.EqualFold(str(s["scheme"]), "basic"):
		return head + fmt.Sprintf("    auth: {type: basic, username: \"${%s_USERNAME}\", password: \"${%s_PASSWORD}\"}\n", env, env), ""
	case typ == "apiKey" && (str(s["in"]) == "header" || str(s["in"]) == "query"):
		return head + fmt.Sprintf("    auth: {type: api_key, name: %s, in: %s, value: \"${%s_API_KEY}\"}\n", yamlString(str(s["name"])), str(s["in"]), env), ""
	case typ == "oauth2" && mapOf(mapOf(s["flows"])["clientCredentials"]) != nil:
		cc := mapOf(mapOf(s["flows"])["clientCredentials"])
		return head + fmt.Sprintf("    auth: {type: oauth2_client_credentials, token_url: %s, client_id: \"${%s_CLIENT_ID}\", client_secret: \"${%s_CLIENT_SECRET}\"}\n",
			yamlString(str(cc["tokenUrl"])), env, env), ""
	}
	return "", fmt.Sprintf("source.auth: the description's security scheme %s (%s) is none idemsync sends by itself: choose source.auth (docs/job-file.md#auth)", names[0], str(s["type"]))
}

// writeResource writes one resource and returns its decisions.
func (d *apiDoc) writeResource(w func(string, ...any), op *listOp) []string {
	pg := d.openAPIPagination(op)
	op.style = pg.style
	var decide []string
	path := op.path
	for _, p := range op.pathParams() {
		if prop, ok := op.parentParam[p]; ok {
			path = strings.ReplaceAll(path, "{"+p+"}", "{parent."+op.parent.columnOf(prop)+"}")
		} else {
			decide = append(decide, fmt.Sprintf("source.path: which parent resource's column fills {%s} (no list operation of the description lists what %s names)?", p, p))
		}
	}
	path = escapePercent(path)
	decide = append(decide, d.requiredQuery(op, pg)...)
	decide = append(decide, pg.decide...)
	props := d.props(op.item)
	const keyQ = "target.key: the records have no id: which columns identify one?"
	if props["id"] == nil {
		decide = append(decide, keyQ)
	}
	w("  - name: %s\n", yamlString(op.name))
	if op.summary != "" {
		w("    # GET %s: %s\n", commentText(op.path), oneLine(op.summary))
	}
	if len(decide) > 0 {
		w("    decide:\n")
		for _, q := range decide {
			w("      - %s\n", quoteDecision(q))
		}
	}
	if op.parent != nil {
		w("    parent: %s\n", yamlString(op.parent.name))
	}
	w("    source:\n      path: %s\n", yamlString(path))
	if op.records != "" {
		w("      records: %s\n", yamlString(op.records))
	}
	why := commentText(pg.why)
	w("    pagination:\n      # %s.\n      style: %s\n", strings.ToUpper(why[:1])+why[1:], pg.style)
	for _, s := range pg.settings {
		line := fmt.Sprintf("      %s: %s", s.key, yamlValue(s.value))
		if s.open {
			line = strings.TrimSuffix(fmt.Sprintf("      # %s: %s", s.key, yamlValue(s.value)), " ")
		}
		if s.note != "" {
			line += "  # " + commentText(s.note)
		}
		w("%s\n", line)
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] == "id" || keys[j] != "id" && keys[i] < keys[j] })
	used := map[string]bool{}
	type col struct{ name, path, typ string }
	var cols []col
	parentCol := ""
	if op.parent != nil {
		for p, prop := range op.parentParam {
			parentCol = columnName(strings.TrimSuffix(strings.TrimSuffix(p, "_id"), "Id")+"_id", used)
			cols = append(cols, col{parentCol, op.parent.columnOf(prop), ""})
		}
	}
	op.columns = map[string]string{}
	for _, k := range keys {
		op.columns[k] = columnName(k, used)
		cols = append(cols, col{op.columns[k], escapePath(k), d.columnType(props[k])})
	}
	w("    target:\n      table: %s\n", yamlString(op.name))
	switch {
	case props["id"] != nil && parentCol != "":
		w("      key: [%s, id]\n", parentCol)
	case props["id"] != nil:
		w("      key: [id]\n")
	default:
		w("      # key: []  # decide: %s\n", keyQ)
	}
	w("      # One column per property of the response's item schema, typed by it.\n      columns:\n")
	for _, c := range cols {
		if c.typ == "" {
			w("        %s: {parent: %s}\n", c.name, yamlString(c.path))
			continue
		}
		w("        %s: {path: %s, type: %s}\n", c.name, yamlString(c.path), c.typ)
	}
	return decide
}

// requiredQuery are the decisions on the operation's required query
// parameters that neither the pagination nor an API key sets (Stripe's
// search query): left out, every request would be refused.
func (d *apiDoc) requiredQuery(op *listOp, pg *pagination) []string {
	set := map[string]bool{}
	for _, s := range pg.settings {
		if s.key == "param" || s.key == "size_param" {
			set[s.value] = true
		}
	}
	for _, sc := range mapOf(mapOf(d.root["components"])["securitySchemes"]) {
		if s := d.obj(sc); str(s["type"]) == "apiKey" && str(s["in"]) == "query" {
			set[str(s["name"])] = true
		}
	}
	var names []string
	for k, p := range op.params {
		if n, ok := strings.CutPrefix(k, "query:"); ok && p["required"] == true && !set[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("source.query.%s: the operation requires the query parameter %s: which value?", n, n))
	}
	return out
}

// columnOf is the column op's file has for property prop ({parent.COL}
// and {parent: COL} name the parent's column, which is prop in snake_case:
// projectKey is project_key). A parent is written before its children.
func (op *listOp) columnOf(prop string) string {
	if c, ok := op.columns[prop]; ok {
		return c
	}
	return prop
}

// escapePercent writes a '%' of a path that starts no escape ("/%",
// "/50%off") as %25: the description's path is literal, and the loader
// refuses a URL with a bad escape.
func escapePercent(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && !(i+2 < len(p) && isHexDigit(p[i+1]) && isHexDigit(p[i+2])) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// oneLine is s fit for a comment of the written file (commentText), at
// most 100 bytes cut at a character.
func oneLine(s string) string {
	return cutText(commentText(s), 100)
}

// cutText is s cut to at most n bytes, "..." in place of the rest, the
// cut on a character's start.
func cutText(s string, n int) string {
	if len(s) > n {
		cut := n - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// commentText is s fit for a comment of the written file: one line (a
// line break in a title, path or name would end the comment, and the rest
// be read as YAML; so would one after U+2028 or U+2029, which YAML reads
// as line breaks), valid UTF-8 without control characters (the loader
// refuses a file that has either).
func commentText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || r == 0xFFFE || r == 0xFFFF { // YAML's breaks and non-printable
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Join(strings.Fields(s), " ")
}

// name is the file's name: the description's title when it is short
// (Petstore), else its server's host without api., www. and the top-level
// domain (api.github.com: github), else "api".
func (d *apiDoc) name() string {
	if n := cleanName(str(mapOf(d.root["info"])["title"])); n != "" && len(n) <= 20 {
		return n
	}
	base, _ := d.baseURL()
	if u, err := url.Parse(base); err == nil {
		labels := strings.Split(u.Hostname(), ".")
		for _, l := range labels[:max(len(labels)-1, 0)] {
			if l != "api" && l != "www" && cleanName(l) != "" {
				return cleanName(l)
			}
		}
	}
	return "api"
}
