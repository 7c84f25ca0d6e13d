package approval

import "context"

// ClaimWithoutRunning moves an approved proposal to executing with its
// idempotency key and audits the attempt, as a crash right after the
// outbox claimed it leaves it.
func (g *Gate) ClaimWithoutRunning(ctx context.Context, p *Proposal) (bool, error) {
	return g.claim(ctx, p, IdempotencyKey(p.ID, p.PayloadHash), "")
}
