package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/memory"
)

// Memory is what omnibrain remembers about the owner; *memory.Memory
// provides it.
type Memory interface {
	List(ctx context.Context, states ...memory.State) ([]*memory.Fact, error)
	Add(ctx context.Context, req memory.AddRequest) (*memory.AddResult, error)
	Forget(ctx context.Context, id int64, why string) (*memory.Fact, error)
	Why(ctx context.Context, id int64) (*memory.Explanation, error)
	Keep(ctx context.Context, id int64) (*memory.AddResult, error)
	Drop(ctx context.Context, id int64) (*memory.Fact, error)
	Problems() map[string]string
}

// MemoryFact is one fact as the API serves it; `memory --json` prints
// the contract's fields of it (id, text, category, source, created).
type MemoryFact struct {
	ID           string     `json:"id"` // "m12"
	Text         string     `json:"text"`
	Category     string     `json:"category"`
	Source       string     `json:"source"` // chat, owner, file, or the item as source:external_id
	Created      time.Time  `json:"created"`
	Updated      time.Time  `json:"updated"`
	State        string     `json:"state"`
	Pinned       bool       `json:"pinned,omitempty"`
	Expires      *time.Time `json:"expires,omitempty"`
	SourceText   string     `json:"source_text,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Note         string     `json:"note,omitempty"`
}

func memoryFact(f *memory.Fact) MemoryFact {
	out := MemoryFact{ID: f.Ref(), Text: f.Text, Category: string(f.Category), Source: f.PublicSource(),
		Created: f.Created, Updated: f.Updated, State: string(f.State), Pinned: f.Pinned, SourceText: f.SourceText, Note: f.Note}
	if !f.Expires.IsZero() {
		e := f.Expires
		out.Expires = &e
	}
	if f.SupersededBy != 0 {
		out.SupersededBy = memory.Ref(f.SupersededBy)
	}
	return out
}

func memoryFacts(fs []*memory.Fact) []MemoryFact {
	out := make([]MemoryFact, 0, len(fs))
	for _, f := range fs {
		out = append(out, memoryFact(f))
	}
	return out
}

// MemoryList is GET /api/v1/memory: the facts, the suggestions waiting
// for the owner, and what is wrong with MEMORY.md or SOUL.md right now.
type MemoryList struct {
	Facts    []MemoryFact      `json:"facts"`
	Pending  []MemoryFact      `json:"pending"`
	Problems map[string]string `json:"problems,omitempty"`
}

// MemoryAddRequest is POST /api/v1/memory.
type MemoryAddRequest struct {
	Text     string `json:"text"`
	Category string `json:"category,omitempty"` // empty: by simple rules
	Pinned   bool   `json:"pinned,omitempty"`
}

// MemoryChange is the answer of the calls that change memory.
type MemoryChange struct {
	Fact       MemoryFact   `json:"fact"`
	Merged     bool         `json:"merged,omitempty"`     // a known fact said this already
	Superseded []MemoryFact `json:"superseded,omitempty"` // older facts it replaced
}

// MemoryWhy is GET /api/v1/memory/{id}/why.
type MemoryWhy struct {
	Fact         MemoryFact   `json:"fact"`
	Replaced     []MemoryFact `json:"replaced"`
	SupersededBy []MemoryFact `json:"superseded_by"`
}

// memoryError maps memory's errors to the API's.
func memoryError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "memory: ")
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrNotFound, msg)
	case errors.Is(err, memory.ErrDecided):
		return fmt.Errorf("%w: %s", ErrConflict, msg)
	case errors.Is(err, memory.ErrInvalid):
		return BadRequest("%s", msg)
	}
	return err
}

func (s *Server) memoryID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if s.b.Memory == nil {
		notConfigured(w, "memory")
		return 0, false
	}
	id, err := memory.ParseRef(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, memoryError(err))
		return 0, false
	}
	return id, true
}

func (s *Server) handleMemoryList(w http.ResponseWriter, r *http.Request) {
	if s.b.Memory == nil {
		notConfigured(w, "memory")
		return
	}
	facts, err := s.b.Memory.List(r.Context(), memory.Active)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pending, err := s.b.Memory.List(r.Context(), memory.Pending)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, MemoryList{Facts: memoryFacts(facts), Pending: memoryFacts(pending), Problems: s.b.Memory.Problems()})
}

func (s *Server) handleMemoryAdd(w http.ResponseWriter, r *http.Request) {
	if s.b.Memory == nil {
		notConfigured(w, "memory")
		return
	}
	var req MemoryAddRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, r, BadRequest("memory: body must be JSON {text, category}: %v", err))
		return
	}
	res, err := s.b.Memory.Add(r.Context(), memory.AddRequest{Text: req.Text, Category: memory.Category(req.Category), Source: memory.SourceOwner, Pinned: req.Pinned})
	if err != nil {
		s.fail(w, r, memoryError(err))
		return
	}
	writeJSON(w, http.StatusOK, memoryChange(res))
}

func memoryChange(res *memory.AddResult) MemoryChange {
	return MemoryChange{Fact: memoryFact(res.Fact), Merged: res.Merged, Superseded: memoryFacts(res.Superseded)}
}

func (s *Server) handleMemoryForget(w http.ResponseWriter, r *http.Request) {
	id, ok := s.memoryID(w, r)
	if !ok {
		return
	}
	f, err := s.b.Memory.Forget(r.Context(), id, "forgotten by the owner")
	if err != nil {
		s.fail(w, r, memoryError(err))
		return
	}
	writeJSON(w, http.StatusOK, MemoryChange{Fact: memoryFact(f)})
}

func (s *Server) handleMemoryWhy(w http.ResponseWriter, r *http.Request) {
	id, ok := s.memoryID(w, r)
	if !ok {
		return
	}
	ex, err := s.b.Memory.Why(r.Context(), id)
	if err != nil {
		s.fail(w, r, memoryError(err))
		return
	}
	writeJSON(w, http.StatusOK, MemoryWhy{Fact: memoryFact(ex.Fact), Replaced: memoryFacts(ex.Replaced), SupersededBy: memoryFacts(ex.SupersededBy)})
}

func (s *Server) handleMemoryDecision(w http.ResponseWriter, r *http.Request) {
	id, ok := s.memoryID(w, r)
	if !ok {
		return
	}
	switch r.PathValue("action") {
	case "keep":
		res, err := s.b.Memory.Keep(r.Context(), id)
		if err != nil {
			s.fail(w, r, memoryError(err))
			return
		}
		writeJSON(w, http.StatusOK, memoryChange(res))
	case "drop":
		f, err := s.b.Memory.Drop(r.Context(), id)
		if err != nil {
			s.fail(w, r, memoryError(err))
			return
		}
		writeJSON(w, http.StatusOK, MemoryChange{Fact: memoryFact(f)})
	default:
		s.fail(w, r, ErrNotFoundf("no action %q (keep, drop)", r.PathValue("action")))
	}
}

// Memory lists the facts, the waiting suggestions and any file problem.
func (c *Client) Memory(ctx context.Context) (*MemoryList, error) {
	var out MemoryList
	return &out, c.do(ctx, http.MethodGet, "/api/v1/memory", nil, &out)
}

// MemoryAdd stores a fact the owner states.
func (c *Client) MemoryAdd(ctx context.Context, req MemoryAddRequest) (*MemoryChange, error) {
	var out MemoryChange
	return &out, c.do(ctx, http.MethodPost, "/api/v1/memory", req, &out)
}

// MemoryForget forgets a fact (or drops a waiting suggestion).
func (c *Client) MemoryForget(ctx context.Context, id string) (*MemoryChange, error) {
	var out MemoryChange
	return &out, c.do(ctx, http.MethodDelete, "/api/v1/memory/"+url.PathEscape(id), nil, &out)
}

// MemoryWhy explains where a fact came from.
func (c *Client) MemoryWhy(ctx context.Context, id string) (*MemoryWhy, error) {
	var out MemoryWhy
	return &out, c.do(ctx, http.MethodGet, "/api/v1/memory/"+url.PathEscape(id)+"/why", nil, &out)
}

// MemoryDecide keeps or drops a suggestion (action "keep" or "drop").
func (c *Client) MemoryDecide(ctx context.Context, id, action string) (*MemoryChange, error) {
	var out MemoryChange
	return &out, c.do(ctx, http.MethodPost, "/api/v1/memory/"+url.PathEscape(id)+"/"+url.PathEscape(action), struct{}{}, &out)
}
