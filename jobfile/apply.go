package jobfile

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// fillRules sets the Default of every rule with Fill on the keys the spec
// leaves unset. A block that is absent (incremental, source.auth) is left
// absent. Defaults are decoded as YAML into the key's type, so a rule's
// Default is written exactly as a user would write it. A key written in
// the file (in written) with a zero or empty value is not unset: it is
// reported through bad, never read as the default (attempts: 0 is not 5).
func fillRules(sp *spec.Spec, written map[string]int, bad paging.BadFunc) {
	walkSpec(reflect.ValueOf(sp).Elem(), "", func(key string, v reflect.Value) {
		r, ok := rules[key]
		if !ok || !r.Fill || !v.IsZero() {
			return
		}
		if _, ok := written[key]; ok {
			if p := ruleProblem(r, v); p != "" {
				bad(key, "%s", p) // 0 must be at least 1; "" must be keep, soft or hard
			} else {
				bad(key, "is empty or zero; omit the key for its default, %v", r.Default)
			}
			return
		}
		text, err := yaml.Marshal(r.Default)
		if err == nil {
			err = yaml.Unmarshal(text, v.Addr().Interface())
		}
		if err != nil {
			panic(fmt.Sprintf("jobfile: default of %s: %v", key, err)) // static data: the rules' test loads every default
		}
	})
}

// checkRules reports, through bad, every set value outside its rule's
// Enum, Min..Max or Pattern; keys in skip already have a problem reported
// by the loader's own checks, which say more.
func checkRules(sp *spec.Spec, skip map[string]bool, bad paging.BadFunc) {
	walkSpec(reflect.ValueOf(sp).Elem(), "", func(key string, v reflect.Value) {
		if skip[key] || v.IsZero() {
			return
		}
		if v.Kind() == reflect.Slice {
			for i := range v.Len() {
				if p := ruleProblem(rules[key+"[]"], v.Index(i)); p != "" {
					bad(key, "%s", p)
				}
			}
			return
		}
		if p := ruleProblem(rules[key], v); p != "" {
			bad(key, "%s", p)
		}
	})
}

// ruleProblem says what is wrong with v under r, or "".
func ruleProblem(r Rule, v reflect.Value) string {
	if v.Kind() == reflect.Pointer && !v.IsNil() { // an optional number: *float64
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if len(r.Enum) > 0 && !slices.Contains(r.Enum, s) {
			return fmt.Sprintf("%q must be %s", s, orList(r.Enum))
		}
		if r.Pattern != "" && !regexp.MustCompile(r.Pattern).MatchString(s) {
			if r.Say != "" {
				return fmt.Sprintf("%q %s", s, r.Say)
			}
			return fmt.Sprintf("%q does not match %s", s, r.Pattern)
		}
	case reflect.Int, reflect.Int64, reflect.Float64:
		var n float64
		if v.CanInt() {
			n = float64(v.Int())
		} else {
			n = v.Float()
		}
		switch {
		case r.Min != nil && r.Max != nil && (n < *r.Min || n > *r.Max):
			return fmt.Sprintf("%v must be between %v and %v", n, *r.Min, *r.Max)
		case r.Min != nil && n < *r.Min:
			return fmt.Sprintf("%v must be at least %v", n, *r.Min)
		case r.Max != nil && n > *r.Max:
			return fmt.Sprintf("%v must be at most %v", n, *r.Max)
		}
	}
	return ""
}

// orList writes values as `a or b`, or `a, b or c`.
func orList(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// walkSpec calls f with the dotted key and value of every field of v, a
// struct of the spec, depth first; nil blocks are not entered, and a
// block's fields are visited after the block itself.
func walkSpec(v reflect.Value, path string, f func(key string, v reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" || !sf.IsExported() {
			continue
		}
		key, fv := join(path, name), v.Field(i)
		f(key, fv)
		if fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Struct && fv.Type().NumField() > 0 && isBlock(fv.Type()) {
			walkSpec(fv, key, f)
		}
	}
}

// isBlock reports whether t is a block of the job file (a struct with keys
// of its own) rather than a value type such as spec.Duration.
func isBlock(t reflect.Type) bool {
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			return true
		}
	}
	return false
}
