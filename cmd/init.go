package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"
	"github.com/tidwall/gjson"

	idsync "github.com/idemsync/idemsync/sync"
)

// initTimeout bounds init's one request.
const initTimeout = 30 * time.Second

type initOpts struct {
	out   string
	name  string
	force bool
}

func newInitCmd(g *globalOpts, ios *IOStreams) *cobra.Command {
	o := &initOpts{}
	c := &cobra.Command{
		Use:   "init URL",
		Short: "Fetch one page of an API and write a commented job file for it",
		Long: `Fetch one page of URL and write a job file for it: the records (the largest
array of objects in the body), the pagination style (a Link header, a next
URL or cursor in the body or a header, page numbers, offsets, has_more, a
since parameter), a key (an id-like field), a column per field, and a
SQLite target beside the file. Lines marked "check" are guesses to read
before the first run. The file validates as written.

The URL's own query parameters are kept, except the ones the chosen
pagination sets itself (page, offset, cursor, size). With --out - the file
is printed on stdout.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runInit(c.Context(), g, ios, args[0], o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.out, "out", "o", "", "job file to write (default: NAME.yaml in the current folder; - for stdout)")
	f.StringVar(&o.name, "name", "", "job name (default: from the URL's last path segment)")
	f.BoolVar(&o.force, "force", false, "overwrite --out when it exists")
	return c
}

func runInit(ctx context.Context, g *globalOpts, ios *IOStreams, rawURL string, o *initOpts) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &usageError{err: fmt.Errorf("init: %q is not an http:// or https:// URL", rawURL)}
	}
	name := o.name
	if name == "" {
		name = nameFromURL(u)
	}
	if !validJobName(name) {
		return &usageError{err: fmt.Errorf("init: --name %q may only contain letters, digits, _ and -", name)}
	}
	out := o.out
	if out == "" {
		out = name + ".yaml"
	}
	if out != "-" && !o.force {
		if _, err := os.Stat(out); err == nil {
			return &usageError{err: fmt.Errorf("init: %s exists; choose another --out or add --force", out)}
		}
	}
	page, err := fetchFirstPage(ctx, u)
	if err != nil {
		return err
	}
	spec, sum, err := buildJobFile(page, name)
	if err != nil {
		return err
	}
	abs := ""
	if out != "-" {
		if abs, err = filepath.Abs(out); err != nil {
			return err
		}
	}
	if _, err := jobfile.Load([]byte(spec), abs, os.LookupEnv); err != nil {
		return contract.Errorf(contract.Permanent, "init wrote a job file that does not validate (please report it): %w\n%s", err, spec)
	}
	if out == "-" {
		fmt.Fprint(ios.Out, spec)
		return nil
	}
	if err := os.WriteFile(out, []byte(spec), 0o644); err != nil {
		return contract.Errorf(contract.Permanent, "write %s: %w", out, err)
	}
	sum["file"] = out
	if g.json {
		writeJSON(ios, sum)
		return nil
	}
	if !g.quiet {
		fmt.Fprintf(ios.Out, "wrote %s: %s pagination, %v records on the first page, key %s, %v columns\n",
			out, sum["style"], sum["records"], sum["key"], sum["columns"])
		fmt.Fprintf(ios.Out, "next: read the lines marked \"check\", then\n  idemsync validate %s\n  idemsync run %s\n  idemsync show %s\n", out, out, out)
	}
	return nil
}

// fetchFirstPage requests u once (no retries: a person is waiting) and
// parses its JSON body. Errors name the URL and status: exit 3 for the
// statuses a later try may get past (408, 429, 5xx) and network errors,
// exit 1 otherwise.
func fetchFirstPage(ctx context.Context, u *url.URL) (*firstPage, error) {
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &usageError{err: fmt.Errorf("init: %w", err)}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "idemsync/"+idsync.Version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, contract.Errorf(contract.Transient, "init: GET %s: %w", redactQuery(u), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, idsync.DefaultMaxBody+1))
	if err != nil {
		return nil, contract.Errorf(contract.Transient, "init: GET %s: read body: %w", redactQuery(u), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		class := contract.Permanent
		if resp.StatusCode == 408 || resp.StatusCode == 429 || resp.StatusCode >= 500 {
			class = contract.Transient
		}
		e := &contract.Error{Class: class, Msg: fmt.Sprintf("init: GET %s: HTTP %d", redactQuery(u), resp.StatusCode)}
		if resp.StatusCode == 401 || resp.StatusCode == 403 {
			e.Hint = "the API wants credentials: write the job file from a public endpoint or by hand, with source.headers or source.auth (docs/job-file.md)"
		}
		return nil, e
	}
	if len(body) > idsync.DefaultMaxBody {
		return nil, contract.Errorf(contract.Permanent, "init: GET %s: body larger than %d bytes", redactQuery(u), idsync.DefaultMaxBody)
	}
	if !gjson.ValidBytes(body) {
		return nil, contract.Errorf(contract.Permanent, "init: GET %s: the body is not JSON (Content-Type %q)", redactQuery(u), resp.Header.Get("Content-Type"))
	}
	return &firstPage{url: u, header: resp.Header, body: gjson.ParseBytes(body)}, nil
}

// redactQuery is u without its query's values, which may hold a key.
func redactQuery(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q.Set(k, "…")
		}
		c.RawQuery = strings.ReplaceAll(q.Encode(), "%E2%80%A6", "…")
	}
	return c.String()
}

// nameFromURL is the job name init proposes: the URL's last path segment
// that is not a version (v1) or a number, made of letters, digits, _ and
// -; else the host's first label; else "job".
func nameFromURL(u *url.URL) string {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		s := cleanName(segs[i])
		if s == "" || strings.Trim(s, "0123456789") == "" || len(s) <= 3 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == "" {
			continue
		}
		return s
	}
	if h := cleanName(strings.Split(u.Hostname(), ".")[0]); h != "" && strings.Trim(h, "0123456789") != "" {
		return h
	}
	return "job"
}

// cleanName keeps letters, digits, _ and - of s (lowercased), other runs
// of characters becoming one -.
func cleanName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.Trim(b.String(), "-")
}

// validJobName reports whether s is a valid job name (letters, digits, _, -).
func validJobName(s string) bool {
	return s != "" && strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return -1
		}
		return r
	}, s) == ""
}
