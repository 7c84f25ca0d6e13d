package telegram

import (
	"context"
	"database/sql"
	"time"
)

// TestState exposes the bot's state in a database to the tests.
type TestState struct{ s state }

// StateOf is the bot's state kept in db, on the clock now.
func StateOf(db *sql.DB, now func() time.Time) TestState { return TestState{state{db: db, now: now}} }

func (t TestState) LastUpdate(ctx context.Context) (int64, time.Time, error) {
	return t.s.lastUpdate(ctx)
}
func (t TestState) Owner(ctx context.Context) (int64, error)     { return t.s.owner(ctx) }
func (t TestState) Awaiting(ctx context.Context) (string, error) { return t.s.awaiting(ctx) }
func (t TestState) UsePairingCode(ctx context.Context, code string, owner int64) (bool, error) {
	return t.s.usePairingCode(ctx, hashCode(code), owner)
}

// WaitRefresh wakes the refresher (which edits decided proposals'
// messages) and returns once it has made a whole pass begun after the call.
func (b *Bot) WaitRefresh(ctx context.Context) error {
	return b.refreshes.Wait(ctx, func() {
		select {
		case b.refreshSig <- struct{}{}:
		default:
		}
	})
}
