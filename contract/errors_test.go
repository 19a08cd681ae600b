package contract

import (
	"errors"
	"fmt"
	"testing"
)

// ClassOf finds the class anywhere in the chain; nil is no failure, and
// an error that says nothing (or an *Error without a class) is permanent.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{nil, None},
		{errors.New("boom"), Permanent},
		{&Error{Msg: "no class"}, Permanent},
		{fmt.Errorf("page 3: %w", Errorf(Transient, "HTTP 503")), Transient},
		{fmt.Errorf("run: %w", &Error{Class: Invalid, Msg: "bad key"}), Invalid},
		{fmt.Errorf("lock: %w", ErrLocked), Locked},
		{&Error{Class: Permanent, Err: ErrLocked}, Locked}, // the sentinel wins
		{ErrNothingToResume, NothingToResume},
		{fmt.Errorf("stopped: %w", ErrInterrupted), Interrupted},
	} {
		if got := ClassOf(tc.err); got != tc.want {
			t.Errorf("ClassOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
