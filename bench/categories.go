package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// profileCategories are where a run's CPU goes, each the cumulative share
// of the functions it names (a function's callees included), as `go tool
// pprof -top -cum` reports them. They overlap where one calls the other
// (fetching includes mapping, which the pipeline does beside the fetch).
var profileCategories = []struct{ name, fn string }{
	{"fetch, body checks, records and mapping (pipeline)", "sync.(*Engine).fetchPage"},
	{"  of which body checks (depth, validity, error payload)", "source/http.(*Fetcher).checkBody"},
	{"  of which the records array (records path)", "source/http.(*Fetcher).records"},
	{"  of which record mapping (columns, conversion, hash)", "sync.(*Engine).mapRecords"},
	{"target write (Upsert)", "sync.(*Engine).upsertTarget"},
	{"  of which SQLite unchanged-rows lookup", "sink/sqlite.unchangedRows"},
	{"  of which SQLite values converted for storing", "sink/sqlite.sqliteRows"},
	{"  of which SQLite binding values (the driver)", "modernc.org/sqlite.(*conn).bind"},
	{"  of which PostgreSQL COPY into an empty table", "sink/postgres.(*Sink).copyFresh"},
	{"checkpoint commit (state file)", "checkpoint.(*Store).CommitPage"},
	{"seen keys of a page (deletes)", "sync.(*Engine).pageKeys"},
	{"end of a full pass (sweep)", "sync.(*Engine).finishPass"},
	{"garbage collection", "runtime.gcBgMarkWorker"},
}

var pprofLine = regexp.MustCompile(`^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+([0-9.]+)%\s+(.+)$`)

// categories prints, with -cpuprofile, the profile categories of the runs
// named (their NAME.pprof in the profile folder), and what each allocated
// per record of the records it synced (NAME.pprof.allocs: the garbage
// the collector's share comes from).
func (b *bench) categories(records int, names ...string) {
	if b.profiles == "" {
		return
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "CPU profile, share of samples\t%s\t\n", strings.Join(names, "\t"))
	shares := make([]map[string]float64, len(names))
	for i, n := range names {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=100000", filepath.Join(b.profiles, n+".pprof")).Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: pprof %s: %v\n", n, err)
			return
		}
		shares[i] = map[string]float64{}
		for _, l := range strings.Split(string(out), "\n") {
			if m := pprofLine.FindStringSubmatch(l); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				shares[i][m[2]] = v
			}
		}
	}
	for _, c := range profileCategories {
		fmt.Fprintf(tw, "%s\t", c.name)
		for i := range names {
			v := 0.0
			for fn, share := range shares[i] {
				if strings.HasSuffix(fn, "/"+c.fn) || fn == c.fn {
					v = share
				}
			}
			fmt.Fprintf(tw, "%.1f%%\t", v)
		}
		fmt.Fprintln(tw)
	}
	for _, index := range []string{"alloc_space", "alloc_objects"} {
		unit := map[string]string{"alloc_space": "allocated per record, bytes", "alloc_objects": "allocated per record, objects"}[index]
		fmt.Fprintf(tw, "%s\t", unit)
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t", allocated(filepath.Join(b.profiles, n+".pprof.allocs"), index, records))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

var pprofTotal = regexp.MustCompile(`of ([0-9.]+)([kMG]?B?) total`)

// allocated is the total of an allocation profile's index (alloc_space,
// alloc_objects) per record, "-" when the profile cannot be read.
func allocated(path, index string, records int) string {
	out, err := exec.Command("go", "tool", "pprof", "-sample_index="+index, "-top", "-nodecount=1", path).Output()
	m := pprofTotal.FindStringSubmatch(string(out))
	if err != nil || m == nil || records == 0 {
		return "-"
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	v *= map[string]float64{"": 1, "B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[m[2]]
	return fmt.Sprintf("%.1f", v/float64(records))
}
