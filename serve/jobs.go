package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// folder is the configured folder of job files: the only files a request
// can name (docs/serve.md, "Security").
type folder struct {
	root string // absolute, symlinks resolved
}

// openFolder checks that dir is a folder and resolves it once.
func openFolder(dir string) (*folder, error) {
	if dir == "" {
		return nil, errors.New("--jobs: name the folder of job files")
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("--jobs %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--jobs %s: not a folder", dir)
	}
	return &folder{root: abs}, nil
}

// jobName is what a job's name in a URL may be: a file name, without a
// folder, not hidden, so that "..", "/etc/passwd" and ".env" never reach
// the file system; at most maxJobName characters, checked apart because a
// bounded repeat ({0,127}) compiles to 127 copies of the class, which cost
// every idemsync process milliseconds of package init (docs/ledger.md,
// "Speed").
var jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

const maxJobName = 128

// jobExts are the job file names a job's name is tried with, in order.
var jobExts = []string{".yaml", ".yml"}

// errNoJob is a name that names no job file of the folder (404);
// errOutside one whose file resolves outside it (403).
var (
	errNoJob   = errors.New("no such job")
	errOutside = errors.New("outside the jobs folder")
)

// resolve returns the job file that name names: NAME.yaml or NAME.yml (or
// NAME itself when it ends so) in the folder, with its symlinks resolved,
// and refused unless it is still inside the folder and a regular file.
func (f *folder) resolve(name string) (string, error) {
	if len(name) > maxJobName || !jobName.MatchString(name) || strings.Contains(name, "..") {
		return "", fmt.Errorf("job %q: %w: a job is named by its file name in the jobs folder (letters, digits, '.', '_', '-')", name, errNoJob)
	}
	candidates := []string{name}
	if !slices.Contains(jobExts, filepath.Ext(name)) {
		candidates = nil
		for _, ext := range jobExts {
			candidates = append(candidates, name+ext)
		}
	}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(filepath.Join(f.root, c))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("job %q: %w", name, err)
		}
		if !f.inside(real) {
			return "", fmt.Errorf("job %q: its file resolves %w", name, errOutside)
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			return "", fmt.Errorf("job %q: %w: %s is not a regular file", name, errNoJob, c)
		}
		return real, nil
	}
	return "", fmt.Errorf("job %q: %w: no %s in the jobs folder", name, errNoJob, strings.Join(candidates, " or "))
}

// inside reports whether the resolved path p is in the folder (at any
// depth: a symlink to a file in a subfolder is still the operator's).
func (f *folder) inside(p string) bool {
	rel, err := filepath.Rel(f.root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// list returns the names of the folder's jobs (file names without
// extension), those whose file resolves outside the folder left out.
func (f *folder) list() ([]string, error) {
	entries, err := os.ReadDir(f.root)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !slices.Contains(jobExts, ext) {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if p, err := f.resolve(e.Name()); err == nil && p != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// files returns the resolved file of every job of the folder.
func (f *folder) files() []string {
	names, _ := f.list()
	var out []string
	for _, n := range names {
		if p, err := f.resolve(n); err == nil {
			out = append(out, p)
		}
	}
	return out
}
