package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/feed"
)

// A feed whose tables were emptied or recreated by hand numbers its next
// events from 1 again: a consumer past those numbers would pass them over
// in silence, so its read is a gap naming its position and the feed's
// last number. On PostgreSQL, whose numbers have no holes, an event
// missing in the middle (a pack deleted by hand) is a gap too, never a
// jump (docs/changes.md, "Retention and gaps").
func TestHandDamagedFeedIsAGap(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		s, fd := tg.fed(t)
		exec := func(query string) {
			t.Helper()
			if tg.name == "postgres" {
				query = strings.ReplaceAll(query, "?", "$1")
			}
			if _, err := fd.DB.ExecContext(ctx, query, tg.job); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		tg.write(t, s, []int64{1, 2, 3, 4, 5, 6}, "a")
		b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail"})
		if err != nil || len(b.Events) != 6 {
			t.Fatalf("first read: %+v, %v", b, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b.ID, 0); err != nil {
			t.Fatal(err)
		}
		// The feed emptied by hand, its numbering with it.
		if tg.name == "postgres" {
			exec(`DELETE FROM idemsync_change_packs WHERE job = ?`)
			exec(`DELETE FROM idemsync_change_jobs WHERE job = ?`)
		} else {
			exec(`DELETE FROM idemsync_changes WHERE job = ?`)
			exec(`DELETE FROM sqlite_sequence WHERE name = 'idemsync_changes' AND ? IS NOT NULL`)
		}
		s2, fd := tg.fed(t)
		tg.write(t, s2, []int64{7, 8, 9}, "a")
		_, err = feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail"})
		if !errors.Is(err, feed.ErrGap) || !strings.Contains(err.Error(), "at event 6") {
			t.Fatalf("mail at 6 after the feed restarted at 1: %v, want a gap naming event 6", err)
		}
		if _, err := feed.Reset(ctx, fd, tg.job, "mail", "oldest"); err != nil {
			t.Fatal(err)
		}
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail"}); err != nil || keysOf(b) != "I:7 I:8 I:9" {
			t.Fatalf("mail after reset --to oldest: %+v, %v; want I:7 I:8 I:9", b, err)
		}
		if tg.name != "postgres" {
			return // SQLite numbers the feeds of one file together: holes are normal
		}
		tg.write(t, s2, []int64{10, 11}, "a")
		tg.write(t, s2, []int64{12}, "a")
		exec(`DELETE FROM idemsync_change_packs WHERE job = ? AND seq = 4`)
		_, err = feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "audit"})
		if !errors.Is(err, feed.ErrGap) || !strings.Contains(err.Error(), "events 4 to 5") {
			t.Fatalf("audit over a pack deleted by hand: %v, want a gap naming events 4 to 5", err)
		}
	})
}
