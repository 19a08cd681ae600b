package jobfile

import (
	"os"
	"strings"
)

// File is a loaded job file: the job's name and its resources in file
// order. A v1 file (source: at the top level) is one resource named after
// the job, and Multi is false.
type File struct {
	Name      string
	Multi     bool
	Resources []Resource
}

// Resource returns the resource named name, or nil.
func (f *File) Resource(name string) *Resource {
	for i := range f.Resources {
		if f.Resources[i].Name == name {
			return &f.Resources[i]
		}
	}
	return nil
}

// Names returns the resources' names in file order.
func (f *File) Names() []string {
	out := make([]string, len(f.Resources))
	for i, r := range f.Resources {
		out[i] = r.Name
	}
	return out
}

// LoadResourcesFile reads and validates the job file at path, with or
// without resources:, expanding ${VAR} from the environment. Errors are
// as LoadFile's (exit 2).
func LoadResourcesFile(path string) (*File, error) {
	abs, data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return loadResourcesData(data, abs, os.LookupEnv)
}

// loadResourcesData is LoadResourcesFile past reading the file.
func loadResourcesData(data []byte, abs string, lookup LookupFunc) (*File, error) {
	rs, err := LoadResources(data, abs, lookup)
	if err != nil {
		return nil, err
	}
	f := &File{Resources: rs}
	if len(rs) == 1 && rs[0].Name == rs[0].Job.Name {
		f.Name = rs[0].Name
		return f, nil
	}
	f.Multi = true
	f.Name, _, _ = strings.Cut(rs[0].Job.Name, ResourceSep)
	return f, nil
}
