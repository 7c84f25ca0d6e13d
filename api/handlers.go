package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

// Status is the answer of GET /api/v1/status.
type Status struct {
	Version    string              `json:"version"`
	Home       string              `json:"home"`
	Timezone   string              `json:"timezone"`
	Daemon     bool                `json:"daemon"` // false when the CLI answered in-process
	PID        int                 `json:"pid,omitempty"`
	StartedAt  time.Time           `json:"started_at,omitzero"`
	Overall    health.State        `json:"overall"`
	Components []health.Component  `json:"components"`
	Items      []store.SourceCount `json:"items"`
	TotalItems int64               `json:"total_items"`
	DiskBytes  int64               `json:"disk_bytes"`
	Configured map[string]bool     `json:"configured"`
	// NotificationsWaiting is how many notifications wait for delivery
	// (all of them while no Telegram bot is set up).
	NotificationsWaiting int64 `json:"notifications_waiting"`
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	if s.b.Status == nil {
		notConfigured(w, "status")
		return
	}
	st, err := s.b.Status(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// handlePing answers that the daemon is up and asks nothing of it: every
// CLI command pings before its real request, and status counts the items
// of every source (20 ms at 100k items, 200 ms at a million).
func (s *Server) handlePing(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// Searcher runs memory searches.
type Searcher interface {
	Search(ctx context.Context, q search.Query) ([]search.Hit, error)
}

// SearchHit is one result of GET /api/v1/search, the shape of `search --json`.
type SearchHit struct {
	ID     string    `json:"id"` // the id the item was imported or collected with
	Source string    `json:"source"`
	Time   time.Time `json:"time"`
	Title  string    `json:"title"`
	// From is who sent it: "Name <address>", the address alone, or "".
	From    string  `json:"from,omitempty"`
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
	// OutsidePeriod is set when the query named a period ("last year")
	// in which nothing matched: the hit is from another time.
	OutsidePeriod *Period `json:"outside_period,omitempty"`
	// ByMeaning is set when none of the query's words are in the item:
	// it was found by similarity of meaning only.
	ByMeaning bool `json:"by_meaning,omitempty"`
	// DateUncertain says how Time was guessed for a message that had no
	// date of its own; empty when the time is the item's own.
	DateUncertain string `json:"date_uncertain,omitempty"`
}

// Period is a span of time a query named, resolved in the owner's timezone.
type Period struct {
	Phrase string    `json:"phrase"` // the words that named it
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"` // exclusive
}

// SearchRequest is the query of GET /api/v1/search.
type SearchRequest struct {
	Query  string
	Limit  int
	Since  time.Time
	Until  time.Time
	Source string
	Person string
	Mode   string
}

func (q SearchRequest) values() string {
	v := url.Values{"q": {q.Query}}
	if q.Limit > 0 {
		v.Set("n", strconv.Itoa(q.Limit))
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339))
	}
	for k, s := range map[string]string{"source": q.Source, "person": q.Person, "mode": q.Mode} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	if s.b.Search == nil {
		notConfigured(w, "search")
		return
	}
	q := r.URL.Query()
	// A period named in the query filters; if nothing in it matches, the
	// hits from other times come marked so the caller can say so.
	sq := search.Query{Text: strings.TrimSpace(q.Get("q")), Mode: q.Get("mode"), Fallback: true}
	// Filters alone list what they select, newest first.
	if sq.Text == "" && q.Get("since") == "" && q.Get("until") == "" && q.Get("source") == "" && q.Get("person") == "" {
		s.fail(w, r, BadRequest("search needs a query (q) or a filter (since, until, source, person)"))
		return
	}
	if n := q.Get("n"); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > 1000 {
			s.fail(w, r, BadRequest("n must be a number from 1 to 1000"))
			return
		}
		sq.Limit = v
	}
	for name, dst := range map[string]*time.Time{"since": &sq.Since, "until": &sq.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.fail(w, r, BadRequest("%s must be an RFC 3339 time: %v", name, err))
				return
			}
			*dst = t
		}
	}
	if v := q.Get("source"); v != "" {
		sq.Sources = strings.Split(v, ",")
	}
	if v := q.Get("person"); v != "" {
		sq.People = []string{v}
	}
	switch sq.Mode {
	case "", "hybrid", "fts", "vector":
	default:
		s.fail(w, r, BadRequest("mode must be hybrid, fts or vector"))
		return
	}
	hits, err := s.b.Search.Search(r.Context(), sq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]SearchHit, 0, len(hits))
	for _, h := range hits {
		hit := SearchHit{ID: h.Item.ExternalID, Source: h.Item.Source, Time: h.Item.Time, Title: h.Item.Title, From: search.Sender(h.Item), Snippet: h.Snippet, Score: h.Score, ByMeaning: h.ByMeaning}
		hit.DateUncertain, _ = h.Item.Meta["date_uncertain"].(string)
		if o := h.Outside; o != nil {
			hit.OutsidePeriod = &Period{Phrase: o.Phrase, Since: o.Since, Until: o.Until}
		}
		out = append(out, hit)
	}
	writeJSON(w, http.StatusOK, out)
}

// ImportRequest is the body of POST /api/v1/import.
type ImportRequest struct {
	Format string `json:"format"` // mbox, maildir, jsonl
	Path   string `json:"path"`   // absolute path readable by the daemon
}

// ImportProgress is streamed while an import runs.
type ImportProgress struct {
	Done  int64  `json:"done"`  // bytes or messages read so far
	Total int64  `json:"total"` // of the same unit; 0 if unknown
	Unit  string `json:"unit"`  // bytes or messages
	Added int    `json:"added"`
}

// ImportFailure is one message that could not be imported.
type ImportFailure struct {
	Where  string `json:"where"` // file, and line or offset
	Reason string `json:"reason"`
}

// ImportSummary is the result of an import.
type ImportSummary struct {
	Format    string          `json:"format"`
	Path      string          `json:"path"`
	Seen      int             `json:"seen"`
	Added     int             `json:"added"`
	Updated   int             `json:"updated"`
	Unchanged int             `json:"unchanged"`
	Failed    []ImportFailure `json:"failed"`
	Seconds   float64         `json:"seconds"`
	// Undated were stored with a guessed time, marked as such: they had no
	// date of their own (Reason says what dated them).
	Undated []ImportFailure `json:"undated,omitempty"`
	// Kept are copies of messages already stored that did not replace
	// them: Reason says why ("kept the stored copy: the new copy is …").
	Kept []ImportFailure `json:"kept,omitempty"`
	// Triage is what was decided, quietly, about the mail of the last days.
	Triage *ImportTriage `json:"triage,omitempty"`
}

// ImportTriage is triage's verdict on an import's mail of the last Days:
// no notification for any of it; the next briefing lists it.
type ImportTriage struct {
	Days         int `json:"days"`
	Mails        int `json:"mails"`
	NeedAnswer   int `json:"need_answer"`
	WorthKnowing int `json:"worth_knowing"`
	Ignored      int `json:"ignored"`
	Undecided    int `json:"undecided,omitempty"` // triage could not decide yet; it retries
	// NextBriefing names the next scheduled briefing ("evening, today
	// 22:00"); Show is the command that shows them now.
	NextBriefing string `json:"next_briefing"`
	Show         string `json:"show"`
}

// Importer imports a mail archive or JSONL file.
type Importer interface {
	Import(ctx context.Context, req ImportRequest, progress func(ImportProgress)) (*ImportSummary, error)
}

// importEvent is one line of the NDJSON stream of POST /api/v1/import.
type importEvent struct {
	Progress *ImportProgress `json:"progress,omitempty"`
	Summary  *ImportSummary  `json:"summary,omitempty"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// handleImport streams progress as NDJSON, then the summary (or an error).
func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	if s.b.Importer == nil {
		notConfigured(w, "import")
		return
	}
	var req ImportRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, r, BadRequest("import: body must be JSON {format, path}: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	last := time.Time{}
	sum, err := s.b.Importer.Import(r.Context(), req, func(p ImportProgress) {
		if time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		enc.Encode(importEvent{Progress: &p})
		if flusher != nil {
			flusher.Flush()
		}
	})
	if err != nil {
		ev := importEvent{Error: &struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{Code: "import_failed", Message: err.Error()}}
		enc.Encode(ev)
		return
	}
	enc.Encode(importEvent{Summary: sum})
}
