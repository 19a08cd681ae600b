package fakeapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// pageFaults applies the scenario's faults of a page's content: a record
// served twice, an empty or short page in the middle of the walk.
func (m *ModelAPI) pageFaults(data []ModelRecord, more bool) []ModelRecord {
	if m.sc.Has("dupkeys") && len(data) > 0 && m.rng.Intn(3) == 0 {
		// The same record twice in one page (an API joining a one-to-many
		// relation): the extra copy is served beside the rest, none is hidden.
		// The copy goes right after the original, so the last record (the
		// one cursors and marks are taken from) stays last.
		k := m.rng.Intn(len(data))
		data = slices.Insert(data, k+1, data[k])
	}
	if m.reqs == m.sc.ShortAt && more {
		if m.sc.Has("emptypage") {
			data = data[:0]
		} else if m.sc.Has("shortpage") && len(data) > 1 {
			data = data[:len(data)/2]
		}
	}
	return data
}

// pageMeta adds the style's pagination fields to a page: totals, has_more,
// the next cursor, URL or Link.
func (m *ModelAPI) pageMeta(out map[string]any, r *http.Request, data []ModelRecord, total, limit int, more bool) {
	next := ""
	if more && len(data) > 0 {
		next = strconv.Itoa(data[len(data)-1].ID)
	}
	withCursor := func() url.Values {
		qq := r.URL.Query()
		qq.Set("cursor", next)
		return qq
	}
	switch m.sc.Style {
	case "page", "page-total", "page-has-more":
		out["meta"] = map[string]any{"total_pages": (total + limit - 1) / limit, "has_more": more}
	case "page-count":
		out["_total"] = total
	case "none":
		out["has_more"] = more
	case "offset", "offset-total":
		out["total"], out["has_more"] = total, more
	case "cursor":
		if next != "" {
			out["next_cursor"] = next
		}
	case "cursor-url":
		if next != "" {
			out["next"] = "http://" + r.Host + r.URL.Path + "?" + withCursor().Encode()
		}
	case "cursor-header":
		if next != "" {
			out["_next"] = next
		}
	case "link":
		if next != "" {
			out["_link"] = fmt.Sprintf(`<http://%s/list?%s>; rel="next"`, r.Host, withCursor().Encode())
		}
	}
}

// WindowsInitial is the initial mark of a windowed scenario's job, in the
// API's own form: two minutes before its first record, so that the records
// spread over several windows.
func (m *ModelAPI) WindowsInitial() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := m.clock
	for _, r := range m.recs {
		if r.mark.Before(first) {
			first = r.mark
		}
	}
	return first.Add(-2 * time.Minute).Truncate(time.Second).Format(modelMarkLayout)
}
