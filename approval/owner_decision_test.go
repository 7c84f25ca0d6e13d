package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
)

// A proposal set to approved or executing by anything but the gate — SQL
// on the database, as a process with access to it could — is refused,
// marked failed and reported; so is an approved proposal whose payload
// was swapped by SQL. The owner's own approvals still run.
func TestOutboxExecutesOnlyTheOwnersDecisions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, sql string
		payload   bool // swap the payload of an approved proposal
	}{
		{name: "approved by SQL", sql: `UPDATE proposals SET state = 'approved', decided_by = 'telegram:4242' WHERE id = ?`},
		{name: "executing by SQL", sql: `UPDATE proposals SET state = 'executing', idempotency_key = 'forged-key' WHERE id = ?`},
		{name: "payload swapped after approval", payload: true,
			sql: `UPDATE proposals SET payload = ?, payload_hash = ? WHERE id = ?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			r := &remote{}
			e.execs.byKind[approval.KindReply] = r
			p, _ := e.gate.Propose(ctx, reply("never approved"))
			d := reply("approved by the owner")
			d.Thread = "t-2" // another thread: a newer draft in p's thread would supersede p
			own, _ := e.gate.Propose(ctx, d)
			e.gate.Approve(ctx, own.ID, own.PayloadHash, approval.APIOwner())
			if err := e.gate.ExecuteApproved(ctx); err != nil {
				t.Fatal(err)
			}
			args := []any{p.ID}
			if c.payload {
				// Approved, and changed before the outbox took it.
				e.gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner())
				forged, _ := approval.Canonical(approval.KindReply, approval.EmailPayload{To: []string{"mallory@evil.example"}, Subject: "x", Body: "y", InReplyTo: "<a1@example.com>"})
				// A consistent forgery: the hash is what the gate would compute.
				args = []any{forged, approval.HashProposal(forged, p.Warnings), p.ID}
			}
			if _, err := e.st.DB().ExecContext(ctx, c.sql, args...); err != nil {
				t.Fatal(err)
			}
			if err := e.gate.ExecuteApproved(ctx); err != nil {
				t.Fatal(err)
			}
			e.clock.Add(time.Hour) // past the settle time of an "interrupted" attempt
			restart(t, e, r, func(g *approval.Gate) {})
			if r.calls != 1 {
				t.Fatalf("%d executions, want only the owner's approval: %v", r.calls, r.sent)
			}
			got, _ := e.gate.Get(ctx, p.ID)
			if got.State != approval.StateFailed || got.Error != approval.ErrNotApprovedByOwner.Error() {
				t.Fatalf("forged proposal: %+v", got)
			}
			n, err := e.st.NotificationByKey(ctx, "proposal-failed:"+p.ID)
			if err != nil || n.Text == "" {
				t.Fatalf("the owner was not told: %v", err)
			}
			if got, _ := e.gate.Get(ctx, own.ID); got.State != approval.StateExecuted {
				t.Fatalf("the owner's own approval: %+v", got)
			}
		})
	}
}
