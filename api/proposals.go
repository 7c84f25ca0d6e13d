package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/omnibrain/omnibrain/approval"
)

// Proposals serves the proposal routes; the approval gate provides it.
// Every decision goes through the gate's compare-and-set, exactly as a
// Telegram button does; the API's caller (socket or token holder) is the
// owner.
type Proposals interface {
	List(ctx context.Context, o approval.ListOptions) ([]*approval.Proposal, error)
	Get(ctx context.Context, id string) (*approval.Proposal, error)
	Audit(ctx context.Context, id string, limit int) ([]approval.AuditEntry, error)
	Approve(ctx context.Context, id, hash string, by approval.Owner) (*approval.Proposal, error)
	Reject(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	Snooze(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	Undo(ctx context.Context, id string, by approval.Owner) (*approval.Proposal, error)
	Edit(ctx context.Context, id string, payload any, by approval.Owner) (*approval.Proposal, error)
	EditBody(ctx context.Context, id, body string, by approval.Owner) (*approval.Proposal, error)
}

// ProposalDetail is GET /api/v1/proposals/{id}: the proposal and its audit log.
type ProposalDetail struct {
	Proposal *approval.Proposal    `json:"proposal"`
	Audit    []approval.AuditEntry `json:"audit"`
}

// ApproveRequest is the body of POST /api/v1/proposals/{id}/approve: the
// payload hash the owner was shown. It is required, so an approval is
// always of an exact payload.
type ApproveRequest struct {
	Hash string `json:"hash"`
}

// EditRequest is the body of POST /api/v1/proposals/{id}/edit: a new body
// (mail or comment text, event description) or a whole new payload.
type EditRequest struct {
	Body    *string         `json:"body,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (s *Server) proposalsOK(w http.ResponseWriter) bool {
	if s.b.Proposals == nil {
		notConfigured(w, "proposals")
		return false
	}
	return true
}

// proposalErr maps the gate's errors to the API's: a decision that came
// too late is a conflict that says the current state.
func proposalErr(err error) error {
	var bad *approval.BadInputError
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrNotFound, err.Error())
	case errors.Is(err, approval.ErrStale), errors.Is(err, approval.ErrHashMismatch):
		return fmt.Errorf("%w: %s", ErrConflict, strings.TrimPrefix(err.Error(), "approval: "))
	case errors.As(err, &bad):
		return BadRequest("%s", strings.TrimPrefix(err.Error(), "approval: "))
	}
	return err
}

func (s *Server) handleProposals(w http.ResponseWriter, r *http.Request) {
	if !s.proposalsOK(w) {
		return
	}
	var o approval.ListOptions
	if v := r.URL.Query().Get("state"); v != "" {
		for _, st := range strings.Split(v, ",") {
			if !approval.ValidState(approval.State(st)) {
				s.fail(w, r, BadRequest("state %q: want pending, approved, executing, executed, failed, rejected, expired, snoozed or superseded", st))
				return
			}
			o.States = append(o.States, approval.State(st))
		}
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			s.fail(w, r, BadRequest("limit must be a number from 1 to 10000"))
			return
		}
		o.Limit = n
	}
	ps, err := s.b.Proposals.List(r.Context(), o)
	if err != nil {
		s.fail(w, r, proposalErr(err))
		return
	}
	if ps == nil {
		ps = []*approval.Proposal{}
	}
	writeJSON(w, http.StatusOK, ps)
}

func (s *Server) handleProposal(w http.ResponseWriter, r *http.Request) {
	if !s.proposalsOK(w) {
		return
	}
	id := r.PathValue("id")
	p, err := s.b.Proposals.Get(r.Context(), id)
	if err != nil {
		s.fail(w, r, proposalErr(err))
		return
	}
	audit, err := s.b.Proposals.Audit(r.Context(), id, 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if audit == nil {
		audit = []approval.AuditEntry{}
	}
	writeJSON(w, http.StatusOK, ProposalDetail{Proposal: p, Audit: audit})
}

func (s *Server) handleProposalDecision(w http.ResponseWriter, r *http.Request) {
	if !s.proposalsOK(w) {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	owner := approval.APIOwner()
	var p *approval.Proposal
	var err error
	switch action {
	case "approve":
		var req ApproveRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Hash == "" {
			s.fail(w, r, BadRequest("approve needs the payload hash you were shown: {\"hash\": \"…\"} (see GET /api/v1/proposals/%s)", id))
			return
		}
		p, err = s.b.Proposals.Approve(r.Context(), id, req.Hash, owner)
	case "reject":
		p, err = s.b.Proposals.Reject(r.Context(), id, owner)
	case "snooze":
		p, err = s.b.Proposals.Snooze(r.Context(), id, owner)
	case "undo":
		p, err = s.b.Proposals.Undo(r.Context(), id, owner)
	case "edit":
		var req EditRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			s.fail(w, r, BadRequest("edit needs {\"body\": \"…\"} or {\"payload\": {…}}: %v", err))
			return
		}
		switch {
		case req.Body != nil && req.Payload == nil:
			p, err = s.b.Proposals.EditBody(r.Context(), id, *req.Body, owner)
		case req.Body == nil && req.Payload != nil:
			p, err = s.b.Proposals.Edit(r.Context(), id, req.Payload, owner)
		default:
			s.fail(w, r, BadRequest("edit needs exactly one of body and payload"))
			return
		}
	default:
		s.fail(w, r, ErrNotFoundf("no action %q (approve, reject, snooze, undo, edit)", action))
		return
	}
	if err != nil {
		s.fail(w, r, proposalErr(err))
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// ErrNotFoundf is an ErrNotFound with a message.
func ErrNotFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

// Proposals lists proposals, newest first; states filters (none: all).
func (c *Client) Proposals(ctx context.Context, states ...string) ([]*approval.Proposal, error) {
	path := "/api/v1/proposals"
	if len(states) > 0 {
		path += "?" + url.Values{"state": {strings.Join(states, ",")}}.Encode()
	}
	var out []*approval.Proposal
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// Proposal returns one proposal with its audit log.
func (c *Client) Proposal(ctx context.Context, id string) (*ProposalDetail, error) {
	var out ProposalDetail
	return &out, c.do(ctx, http.MethodGet, "/api/v1/proposals/"+url.PathEscape(id), nil, &out)
}

// Approve approves the proposal if hash is still its payload hash.
func (c *Client) Approve(ctx context.Context, id, hash string) (*approval.Proposal, error) {
	return c.decide(ctx, id, "approve", ApproveRequest{Hash: hash})
}

// Reject rejects the proposal.
func (c *Client) Reject(ctx context.Context, id string) (*approval.Proposal, error) {
	return c.decide(ctx, id, "reject", struct{}{})
}

// Snooze snoozes the proposal.
func (c *Client) Snooze(ctx context.Context, id string) (*approval.Proposal, error) {
	return c.decide(ctx, id, "snooze", struct{}{})
}

// Undo takes back an approval still waiting out its send delay: the
// proposal is pending again and nothing was sent.
func (c *Client) Undo(ctx context.Context, id string) (*approval.Proposal, error) {
	return c.decide(ctx, id, "undo", struct{}{})
}

// Edit replaces the proposal with a new one (its own approval needed) and returns the new one.
func (c *Client) Edit(ctx context.Context, id string, req EditRequest) (*approval.Proposal, error) {
	return c.decide(ctx, id, "edit", req)
}

func (c *Client) decide(ctx context.Context, id, action string, body any) (*approval.Proposal, error) {
	var out approval.Proposal
	return &out, c.do(ctx, http.MethodPost, "/api/v1/proposals/"+url.PathEscape(id)+"/"+action, body, &out)
}
