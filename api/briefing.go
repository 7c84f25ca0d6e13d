package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Briefer makes and lists briefings (the proactive engine).
type Briefer interface {
	// Briefing returns today's briefing of kind (morning, evening,
	// weekly), making, storing and sending it first if there is none: the
	// same path the schedule takes, so one per kind per day.
	Briefing(ctx context.Context, kind string) (*Briefing, error)
	// Refresh makes today's briefing of kind again, with what arrived
	// since it was made, and replaces the stored one.
	Refresh(ctx context.Context, kind string) (*Briefing, error)
	// Briefings lists stored briefings of kind (any if empty), newest first.
	Briefings(ctx context.Context, kind string, limit int) ([]*Briefing, error)
}

// Explainer explains an item or a proposal by its id.
type Explainer interface {
	Explain(ctx context.Context, id string) (*Explanation, error)
}

// Briefing is one briefing as the API serves it.
type Briefing struct {
	Kind        string          `json:"kind"`
	Day         string          `json:"day"` // local date; weekly: its Monday
	PeriodStart time.Time       `json:"period_start"`
	PeriodEnd   time.Time       `json:"period_end"`
	Created     time.Time       `json:"created"`
	Late        bool            `json:"late,omitempty"`
	Manual      bool            `json:"manual,omitempty"`
	New         bool            `json:"new"`                 // made by this request
	Narrative   string          `json:"narrative,omitempty"` // a model's summary, when one was available
	Text        string          `json:"text"`                // templated from the data
	Data        json.RawMessage `json:"data"`                // the sections as data
}

// Explanation is why omnibrain did what it did about an item or proposal.
type Explanation struct {
	ID     string          `json:"id"`
	Text   string          `json:"text"`   // for people, in the owner's timezone
	Detail json.RawMessage `json:"detail"` // item, triage with factors, proposal, notifications, ...
}

// handleBriefing serves POST /api/v1/briefings/{kind}[?refresh=true].
func (s *Server) handleBriefing(w http.ResponseWriter, r *http.Request) {
	if s.b.Briefings == nil {
		notConfigured(w, "briefings")
		return
	}
	kind := r.PathValue("kind")
	switch kind {
	case "morning", "evening", "weekly":
	default:
		s.fail(w, r, BadRequest("unknown briefing %q: want morning, evening or weekly", kind))
		return
	}
	var b *Briefing
	var err error
	if r.URL.Query().Get("refresh") == "true" {
		b, err = s.b.Briefings.Refresh(r.Context(), kind)
	} else {
		b, err = s.b.Briefings.Briefing(r.Context(), kind)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// handleBriefings serves GET /api/v1/briefings?kind=&limit=.
func (s *Server) handleBriefings(w http.ResponseWriter, r *http.Request) {
	if s.b.Briefings == nil {
		notConfigured(w, "briefings")
		return
	}
	q := r.URL.Query()
	kind := q.Get("kind")
	switch kind {
	case "", "morning", "evening", "weekly":
	default:
		s.fail(w, r, BadRequest("unknown briefing %q: want morning, evening or weekly", kind))
		return
	}
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			s.fail(w, r, BadRequest("limit must be a number from 1 to 500"))
			return
		}
		limit = n
	}
	bs, err := s.b.Briefings.Briefings(r.Context(), kind, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if bs == nil {
		bs = []*Briefing{}
	}
	writeJSON(w, http.StatusOK, bs)
}

// handleExplain serves GET /api/v1/explain?id= (ids such as
// "issue:owner/repo#3" do not fit in a path).
func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	if s.b.Explain == nil {
		notConfigured(w, "explain")
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		s.fail(w, r, BadRequest("explain needs an id: an item's id or a proposal id"))
		return
	}
	x, err := s.b.Explain.Explain(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, x)
}

// Briefing asks for today's briefing of kind, making it if needed.
func (c *Client) Briefing(ctx context.Context, kind string) (*Briefing, error) {
	var b Briefing
	return &b, c.do(ctx, http.MethodPost, "/api/v1/briefings/"+url.PathEscape(kind), nil, &b)
}

// RefreshBriefing makes today's briefing of kind again with what arrived
// since it was made.
func (c *Client) RefreshBriefing(ctx context.Context, kind string) (*Briefing, error) {
	var b Briefing
	return &b, c.do(ctx, http.MethodPost, "/api/v1/briefings/"+url.PathEscape(kind)+"?refresh=true", nil, &b)
}

// Briefings lists stored briefings of kind (any if empty), newest first.
func (c *Client) Briefings(ctx context.Context, kind string, limit int) ([]*Briefing, error) {
	v := url.Values{}
	if kind != "" {
		v.Set("kind", kind)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var bs []*Briefing
	return bs, c.do(ctx, http.MethodGet, "/api/v1/briefings?"+v.Encode(), nil, &bs)
}

// Explain explains an item (by the id it was collected or imported with)
// or a proposal (by its id).
func (c *Client) Explain(ctx context.Context, id string) (*Explanation, error) {
	var x Explanation
	return &x, c.do(ctx, http.MethodGet, "/api/v1/explain?id="+url.QueryEscape(id), nil, &x)
}
