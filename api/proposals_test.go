package api_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/store"
)

func proposalsAPI(t *testing.T) (*api.Client, *approval.Gate) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gate, err := approval.NewGate(approval.GateOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := api.NewServer(slog.New(slog.DiscardHandler), "", api.Backends{Proposals: gate})
	c, stop := api.NewInProcessClient(srv.SocketHandler())
	t.Cleanup(stop)
	return c, gate
}

func proposeMail(t *testing.T, g *approval.Gate, body string) *approval.Proposal {
	t.Helper()
	p, err := g.Propose(context.Background(), approval.Draft{Kind: approval.KindEmail, Origin: "agent",
		Payload: approval.EmailPayload{To: []string{"alice@example.com"}, Subject: "Hi", Body: body}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func apiStatus(err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func TestProposalsAPIDecisions(t *testing.T) {
	c, g := proposalsAPI(t)
	ctx := context.Background()
	a := proposeMail(t, g, "one")
	b := proposeMail(t, g, "two")

	all, err := c.Proposals(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %v %v", all, err)
	}
	if string(all[0].Payload) == "" || all[0].Expires.IsZero() || all[0].Created.IsZero() {
		t.Errorf("listed proposal lacks fields: %+v", all[0])
	}
	if _, err := c.Proposals(ctx, "bogus"); apiStatus(err) != 400 {
		t.Errorf("bad state: %v", err)
	}
	if _, err := c.Proposal(ctx, "nosuchid22"); apiStatus(err) != 404 {
		t.Errorf("unknown id: %v", err)
	}

	if _, err := c.Approve(ctx, a.ID, ""); apiStatus(err) != 400 {
		t.Errorf("approve without hash: %v", err)
	}
	if _, err := c.Approve(ctx, a.ID, b.PayloadHash); apiStatus(err) != 409 {
		t.Errorf("approve with another payload's hash: %v", err)
	}
	p, err := c.Approve(ctx, a.ID, a.PayloadHash)
	if err != nil || p.State != approval.StateApproved || p.DecidedBy != "api" {
		t.Fatalf("approve: %+v %v", p, err)
	}
	_, err = c.Approve(ctx, a.ID, a.PayloadHash)
	if apiStatus(err) != 409 || !strings.Contains(err.Error(), "is approved") {
		t.Errorf("second approve: %v", err)
	}
	if _, err := c.Reject(ctx, a.ID); apiStatus(err) != 409 {
		t.Errorf("reject after approve: %v", err)
	}

	body := "two, edited"
	nw, err := c.Edit(ctx, b.ID, api.EditRequest{Body: &body})
	if err != nil || nw.Supersedes != b.ID || nw.State != approval.StatePending || !strings.Contains(string(nw.Payload), "two, edited") {
		t.Fatalf("edit: %+v %v", nw, err)
	}
	if _, err := c.Edit(ctx, nw.ID, api.EditRequest{}); apiStatus(err) != 400 {
		t.Errorf("empty edit: %v", err)
	}
	if _, err := c.Edit(ctx, nw.ID, api.EditRequest{Payload: []byte(`{"to":["x@y.z"],"body":"b","bcc_everyone":true}`)}); apiStatus(err) != 400 {
		t.Errorf("payload with an unknown field: %v", err)
	}
	if _, err := c.Snooze(ctx, nw.ID); err != nil {
		t.Errorf("snooze: %v", err)
	}
	if p, err := c.Reject(ctx, nw.ID); err != nil || p.State != approval.StateRejected {
		t.Errorf("reject snoozed: %+v %v", p, err)
	}

	d, err := c.Proposal(ctx, b.ID)
	if err != nil || d.Proposal.State != approval.StateSuperseded || d.Proposal.SupersededBy != nw.ID {
		t.Fatalf("show: %+v %v", d, err)
	}
	if len(d.Audit) != 2 || d.Audit[1].Action != "edited" || d.Audit[1].Actor != "api" {
		t.Errorf("audit %+v", d.Audit)
	}
	pending, _ := c.Proposals(ctx, "pending")
	if len(pending) != 0 {
		t.Errorf("pending %v", pending)
	}
}

func TestProposalsAPIWithoutBackend(t *testing.T) {
	srv := api.NewServer(slog.New(slog.DiscardHandler), "", api.Backends{})
	c, stop := api.NewInProcessClient(srv.SocketHandler())
	defer stop()
	if _, err := c.Proposals(context.Background()); apiStatus(err) != 501 {
		t.Errorf("no backend: %v", err)
	}
	if _, err := c.TelegramPair(context.Background()); apiStatus(err) != 501 {
		t.Errorf("no pairing backend: %v", err)
	}
}
