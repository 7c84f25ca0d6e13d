package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// CollectRequest is the body of POST /api/v1/collect. No names means
// every collector.
type CollectRequest struct {
	Collectors []string `json:"collectors,omitempty"`
}

// CollectResult is what one collector's pass did.
type CollectResult struct {
	Collector string  `json:"collector"`
	State     string  `json:"state"`            // ok, failed, disabled
	Seen      int     `json:"seen"`             // items received from the source
	Stored    int     `json:"stored"`           // new or changed items stored
	Skipped   int     `json:"skipped"`          // malformed items logged and skipped
	Detail    string  `json:"detail,omitempty"` // e.g. "full sync", "backfill"
	Error     string  `json:"error,omitempty"`
	Fix       string  `json:"fix,omitempty"` // for disabled or owner-action states
	Seconds   float64 `json:"seconds"`
}

// Collectors runs collector passes now. Unknown names are a
// *BadRequestError; a pass that fails is a result, not an error.
type Collectors interface {
	CollectNow(ctx context.Context, names []string) ([]CollectResult, error)
}

func (s *Server) handleCollect(w http.ResponseWriter, r *http.Request) {
	if s.b.Collect == nil {
		notConfigured(w, "collect")
		return
	}
	var req CollectRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		s.fail(w, r, BadRequest("collect: body must be JSON {collectors: [names]}: %v", err))
		return
	}
	res, err := s.b.Collect.CollectNow(r.Context(), req.Collectors)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Collect runs one pass of the named collectors (all when none) now.
func (c *Client) Collect(ctx context.Context, names ...string) ([]CollectResult, error) {
	var out []CollectResult
	return out, c.do(ctx, http.MethodPost, "/api/v1/collect", CollectRequest{Collectors: names}, &out)
}
