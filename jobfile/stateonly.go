package jobfile

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"gopkg.in/yaml.v3"
)

// unsetPlaceholder stands in for a ${VAR} that is not set when a job file
// is read only for its state (LoadForState): a value every key that takes
// a variable accepts (a token, a host, a number), and too short for the
// redactor to take for a secret.
const unsetPlaceholder = "1"

// LoadForState reads the job file at path for a command that only reads
// or trims its state (status, prune): those need the job's names, its
// state file and its walk, not its credentials, so a ${VAR} that is not
// set (an API token kept in the scheduler's environment) does not stop
// them (docs/operations.md, Status). It returns the variables that were
// not set: what the job file says with them is not known, so the caller
// must not compare the walk. A state: or name: that uses one is an error
// (the state file cannot be found without it), and so is any problem the
// file has with every variable set.
func LoadForState(path string) (*File, []string, error) {
	abs, data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := loadResourcesData(data, abs, os.LookupEnv)
	if err == nil {
		return f, nil, nil
	}
	var unset []string
	lookup := func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		if !strings.Contains(string(data), "${"+name+"}") {
			return "", false // only ${NAME:-default}: the default applies
		}
		if !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
		return unsetPlaceholder, true
	}
	f, err2 := loadResourcesData(data, abs, lookup)
	if err2 != nil || len(unset) == 0 {
		return nil, nil, err // the file's own problem, as run reports it
	}
	if p := stateUsesUnset(data, unset); p != "" {
		return nil, nil, &contract.Error{Class: contract.Invalid, Err: &SpecError{File: abs, Problems: []string{p}}}
	}
	return f, unset, nil
}

// stateUsesUnset names the first top-level key that locates the job's
// state (state, name) whose value uses one of the unset variables; "" when
// none does.
func stateUsesUnset(data []byte, unset []string) string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return ""
	}
	for _, key := range []string{"name", "state"} {
		v := mapValue(root.Content[0], key)
		if v == nil {
			continue
		}
		for _, name := range unset {
			if strings.Contains(v.Value, "${"+name+"}") || strings.Contains(v.Value, "${"+name+":-") {
				return fmt.Sprintf("line %d: %s: environment variable %s is not set, and the state file cannot be found without it", v.Line, key, name)
			}
		}
	}
	return ""
}
