package jobfile

import (
	"errors"

	"gopkg.in/yaml.v3"
)

// specName reads the job's name: from a job file's bytes as best it can,
// for error reports about a file that is otherwise invalid. It returns ""
// when the bytes are not YAML, have no top-level string name:, or the name
// refers to an unset variable; the name is not checked against the rules
// validation applies (an invalid name is still the name the user wrote).
func specName(data []byte, lookup LookupFunc) string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return ""
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value != "name" || v.Kind != yaml.ScalarNode {
			continue
		}
		name, _, err := expandEnv(v.Value, lookup)
		if err != nil {
			return ""
		}
		return name
	}
	return ""
}

// SpecName returns the job name an error carries: the name: of the job file
// whose spec was invalid, when the file could be read that far, else "".
func SpecName(err error) string {
	var se *SpecError
	if errors.As(err, &se) {
		return se.Name
	}
	return ""
}
