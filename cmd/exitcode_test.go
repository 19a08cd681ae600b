package cmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// Every class of failure has its own exit code: a class added to contract
// without one here fails (it would exit 1 silently).
func TestEveryClassHasAnExitCode(t *testing.T) {
	seen := map[int]contract.Class{}
	for c := contract.None; !strings.HasPrefix(c.String(), "class "); c++ {
		code, ok := classCodes[c]
		if !ok {
			t.Errorf("class %v has no exit code in classCodes", c)
			continue
		}
		if o, dup := seen[code]; dup {
			t.Errorf("classes %v and %v share exit code %d", o, c, code)
		}
		seen[code] = c
		if classOfCode(code) != c || exitCode(wrapClass(c)) != code {
			t.Errorf("class %v: exit %d does not map back (%v, %d)", c, code, classOfCode(code), exitCode(wrapClass(c)))
		}
	}
}

// wrapClass is an error of class c, wrapped once (nil for None).
func wrapClass(c contract.Class) error {
	if c == contract.None {
		return nil
	}
	return fmt.Errorf("wrapped: %w", contract.Errorf(c, "failure"))
}
