package schema

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// strictProblems lists what a strict-mode validator rejects in s (the
// rules strictSchema enforces), with the path of each.
func strictProblems(s *Schema, path string) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, name := range s.Required {
		if s.Properties.Get(name) == nil {
			out = append(out, path+": required "+name+" is not in properties")
		}
	}
	if (s.Minimum != nil || s.Maximum != nil) && s.Type != "integer" && s.Type != "number" {
		out = append(out, path+": minimum or maximum on type "+s.Type)
	}
	if s.Properties != nil {
		for _, p := range *s.Properties {
			out = append(out, strictProblems(p.Schema, path+"/properties/"+p.Name)...)
		}
	}
	if s.Definitions != nil {
		for _, p := range *s.Definitions {
			out = append(out, strictProblems(p.Schema, path+"/definitions/"+p.Name)...)
		}
	}
	if sub, ok := s.AdditionalProperties.(*Schema); ok {
		out = append(out, strictProblems(sub, path+"/additionalProperties")...)
	}
	for name, sub := range map[string]*Schema{"propertyNames": s.PropertyNames, "items": s.Items, "not": s.Not, "if": s.If, "then": s.Then} {
		out = append(out, strictProblems(sub, path+"/"+name)...)
	}
	for name, list := range map[string][]*Schema{"anyOf": s.AnyOf, "oneOf": s.OneOf, "allOf": s.AllOf} {
		for _, sub := range list {
			out = append(out, strictProblems(sub, path+"/"+name)...)
		}
	}
	return out
}

// The published schema passes strict mode (issue 28: ajv --strict=true
// rejected it at #/oneOf/0/not and warned 12 times): checked here without
// node, and by ajv itself below where npx is installed.
func TestSchemaIsStrict(t *testing.T) {
	for _, p := range strictProblems(Job(), "#") {
		t.Error(p)
	}
}

// ajvVersion is the ajv-cli the strict-mode test runs.
const ajvVersion = "ajv-cli@5.0.0"

func TestSchemaPassesAjvStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: ajv is fetched with npx")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx (node.js) is not installed: ajv --strict=true is not run; TestSchemaIsStrict checks the same rules")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, npx, "-y", ajvVersion, "help").CombinedOutput(); err != nil {
		t.Skipf("%s cannot be fetched with npx (%v): ajv --strict=true is not run\n%s", ajvVersion, err, out)
	}
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	args := []string{"-y", ajvVersion, "validate", "--strict=true", "--spec=draft7", "-s", "job.schema.json"}
	for _, e := range examples {
		args = append(args, "-d", e)
	}
	out, err := exec.CommandContext(ctx, npx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ajv --strict=true: %v\n%s", err, out)
	}
}
