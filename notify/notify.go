// Package notify carries messages for the owner from every part of
// omnibrain to the Telegram bot, through a durable queue, with a level that
// the notification policy uses to decide when (and whether) to deliver.
package notify

// Level is how much a message matters.
type Level string

const (
	Silent    Level = "silent"    // recorded, never pushed
	FYI       Level = "fyi"       // batched into the next briefing
	Important Level = "important" // pushed, outside quiet hours and within the daily budget
	Critical  Level = "critical"  // pushed now, always
)

// Message is one notification.
type Message struct {
	Level Level
	// Key de-duplicates: a message whose key was queued before is dropped,
	// so the same item is never notified twice for the same reason.
	Key  string
	Text string // plain text; the bot formats and escapes it
	// ProposalID, when set, makes the bot show the proposal with its buttons.
	ProposalID string
	ItemID     int64
}
