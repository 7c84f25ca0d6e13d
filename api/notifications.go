package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Notifier reads and clears the notifications that wait for delivery:
// without a Telegram bot nothing delivers them, and the owner reads them
// with `omnibrain notifications`.
type Notifier interface {
	Waiting(ctx context.Context, limit int) ([]Notification, error)
	Clear(ctx context.Context, ids []int64) (int, error)
}

// Notification is one waiting notification.
type Notification struct {
	ID         int64     `json:"id"`
	Level      string    `json:"level"`
	Text       string    `json:"text"`
	ProposalID string    `json:"proposal_id,omitempty"`
	ItemID     int64     `json:"item_id,omitempty"`
	Created    time.Time `json:"created"`
	NotBefore  time.Time `json:"not_before,omitzero"` // held until then (quiet hours)
}

// ClearRequest is the body of POST /api/v1/notifications/clear: the ids
// to clear, or every waiting one when empty.
type ClearRequest struct {
	IDs []int64 `json:"ids"`
}

// ClearResult says how many notifications were cleared.
type ClearResult struct {
	Cleared int `json:"cleared"`
}

// handleNotifications serves GET /api/v1/notifications?limit=.
func (s *Server) handleNotifications(w http.ResponseWriter, r *http.Request) {
	if s.b.Notifications == nil {
		notConfigured(w, "notifications")
		return
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.fail(w, r, BadRequest("limit must be a number from 1 to 1000"))
			return
		}
		limit = n
	}
	ns, err := s.b.Notifications.Waiting(r.Context(), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ns == nil {
		ns = []Notification{}
	}
	writeJSON(w, http.StatusOK, ns)
}

// handleClearNotifications serves POST /api/v1/notifications/clear.
func (s *Server) handleClearNotifications(w http.ResponseWriter, r *http.Request) {
	if s.b.Notifications == nil {
		notConfigured(w, "notifications")
		return
	}
	var req ClearRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, r, BadRequest("notifications: body must be JSON {ids}: %v", err))
		return
	}
	n, err := s.b.Notifications.Clear(r.Context(), req.IDs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ClearResult{Cleared: n})
}

// Notifications lists the notifications waiting for delivery, oldest first.
func (c *Client) Notifications(ctx context.Context, limit int) ([]Notification, error) {
	v := url.Values{}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var ns []Notification
	return ns, c.do(ctx, http.MethodGet, "/api/v1/notifications?"+v.Encode(), nil, &ns)
}

// ClearNotifications marks waiting notifications read (all when ids is empty).
func (c *Client) ClearNotifications(ctx context.Context, ids []int64) (*ClearResult, error) {
	var res ClearResult
	return &res, c.do(ctx, http.MethodPost, "/api/v1/notifications/clear", ClearRequest{IDs: ids}, &res)
}
