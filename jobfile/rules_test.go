package jobfile

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	idsync "github.com/idemsync/idemsync/sync"
)

// withKey returns validSpec (with an auth block when key is under
// source.auth) with the dotted key set to v.
func withKey(t *testing.T, key string, v any) string {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(validSpec), &m); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(key, "source.auth.") {
		m["source"].(map[string]any)["auth"] = map[string]any{"type": "api_key", "name": "X-Key", "value": "k"}
	}
	if strings.HasPrefix(key, "incremental.") {
		m["incremental"] = map[string]any{"field": "updated_at", "param": "since"}
	}
	parts := strings.Split(key, ".")
	node := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := node[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[p] = next
		}
		node = next
	}
	node[parts[len(parts)-1]] = v
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Every rule that constrains a value is applied by the loader: a value
// outside its enum, range or pattern is refused with a problem naming the
// key, and a value inside is accepted.
func TestRulesCheckedByLoader(t *testing.T) {
	vars := env(map[string]string{"API_TOKEN": "x"})
	checked := 0
	for key, r := range rules {
		var bad, good []any
		item := strings.HasSuffix(key, "[]")
		switch {
		case strings.Contains(key, "*"):
			continue // column types: checked by the column code, TestLoadColumns
		case len(r.Enum) > 0:
			bad, good = []any{"no-such-" + strings.ReplaceAll(key, ".", "-")}, []any{r.Enum[len(r.Enum)-1]}
		case r.Min != nil || r.Max != nil:
			if r.Min != nil {
				below := *r.Min - 1
				if below == 0 && r.Fill {
					below-- // 0 is unset: the default applies
				}
				bad, good = append(bad, below), append(good, *r.Min)
			}
			if r.Max != nil {
				bad, good = append(bad, *r.Max+1), append(good, *r.Max)
			}
		case r.Pattern != "":
			bad = []any{"%%not valid%%"}
		default:
			continue
		}
		name := strings.TrimSuffix(key, "[]")
		wrap := func(v any) any {
			if item {
				return []any{v}
			}
			return v
		}
		for _, v := range bad {
			_, err := Load([]byte(withKey(t, name, wrap(v))), "/jobs/orders.yaml", vars)
			if err == nil || !strings.Contains(err.Error(), name+": ") {
				t.Errorf("%s: %v: got %v, want a problem naming %s", key, v, err, name)
			}
		}
		for _, v := range good {
			if key == "source.auth.in" || key == "source.auth.auth_style" || key == "source.auth.type" || key == "pagination.in" || key == "incremental.concurrency" ||
				strings.HasPrefix(key, "target.schema.") {
				continue // their accepted values need other keys (target.schema: no columns); their own tests cover them
			}
			if _, err := Load([]byte(withKey(t, name, wrap(v))), "/jobs/orders.yaml", vars); err != nil {
				t.Errorf("%s: %v: %v, want it accepted", key, v, err)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d rules constrain a value; the table lost its constraints", checked)
	}
}

// Every default a rule fills is the value a loaded job has when the key is
// unset, and the schema shows that same default.
func TestRulesFillDefaults(t *testing.T) {
	spec := validSpec + "incremental: {field: updated_at, param: since}\n"
	spec = strings.Replace(spec, "retry:\n  max_wait: 10s\n", "", 1)
	job, err := Load([]byte(spec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	filled := 0
	for key, r := range rules {
		if !r.Fill || key == "pagination.style" {
			continue
		}
		got := fieldAt(reflect.ValueOf(job.Spec), strings.Split(key, "."))
		want := reflect.New(got.Type())
		text, _ := yaml.Marshal(r.Default)
		if err := yaml.Unmarshal(text, want.Interface()); err != nil {
			t.Fatalf("%s: default %v does not decode: %v", key, r.Default, err)
		}
		if !reflect.DeepEqual(got.Interface(), want.Elem().Interface()) {
			t.Errorf("%s = %v, want the rule's default %v", key, got.Interface(), r.Default)
		}
		filled++
	}
	if filled < 10 {
		t.Fatalf("only %d defaults filled by rules", filled)
	}
	// The constants the engine and the docs use agree with the rules.
	for key, want := range map[string]any{"retry.attempts": idsync.DefaultAttempts, "target.on_bad_record": idsync.DefaultOnBadRecord,
		"source.timeout": idsync.DefaultTimeout.String(), "retry.on_status": idsync.DefaultRetryStatus} {
		if got := rules[key].Default; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rule %s default %v, constant %v", key, got, want)
		}
	}
}

// fieldAt is the spec field at the dotted path (json names).
func fieldAt(v reflect.Value, path []string) reflect.Value {
	for _, name := range path {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		i := slices.IndexFunc(reflect.VisibleFields(v.Type()), func(f reflect.StructField) bool {
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			return n == name
		})
		v = v.Field(i)
	}
	return v
}
