package checkpoint

import (
	"context"
	"testing"
	"time"
)

// A job file's cycle opens at a time, reads back to the nanosecond, is
// replaced by a later open and forgotten by a close.
func TestCycles(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if _, open, err := s.Cycle(ctx, "shop"); err != nil || open {
		t.Fatalf("a new file has an open cycle: %v %v", open, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := s.OpenCycle(ctx, "shop", at); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenCycle(ctx, "shop|orders", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, open, err := s.Cycle(ctx, "shop")
	if err != nil || !open || !got.Equal(at) {
		t.Fatalf("cycle %v open %v err %v, want %v", got, open, err, at)
	}
	if err := s.OpenCycle(ctx, "shop", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Cycle(ctx, "shop"); !got.Equal(at.Add(time.Minute)) {
		t.Errorf("reopened cycle %v", got)
	}
	if err := s.CloseCycle(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, open, _ := s.Cycle(ctx, "shop"); open {
		t.Error("closed cycle still open")
	}
	if _, open, _ := s.Cycle(ctx, "shop|orders"); !open {
		t.Error("closing one cycle closed another")
	}
}
