package plugins

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/omnibrain/omnibrain/notify"
)

// Notifier delivers a message to the owner (the notification queue).
type Notifier interface {
	Notify(ctx context.Context, m notify.Message) error
}

// DefaultMessagesPerHour is how many messages a plugin may send the
// owner in an hour.
const DefaultMessagesPerHour = 10

// maxMessage bounds one app message (a Telegram message holds 4096).
const maxMessage = 3500

var (
	// ErrMessageKey: no plugin with that name may send messages with that key.
	ErrMessageKey = errors.New("wrong or missing plugin key")
	// ErrMessageHeld: the plugin's manifest changed; it is not used until confirmed.
	ErrMessageHeld = errors.New("the plugin's manifest changed; its messages are refused until the owner confirms it")
	// ErrMessageText: the text is empty or too long.
	ErrMessageText = fmt.Errorf("the message must be 1 to %d characters", maxMessage)
)

// RateLimitedError says a plugin sent its share of messages this hour.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many messages this hour; try again in %s", e.RetryAfter)
}

// Messages delivers app-initiated messages: a chat-tools plugin whose
// manifest enables chat_messages sends the owner a message with its
// per-plugin key, marked as coming from it, at most PerHour an hour.
type Messages struct {
	m       *Manager
	n       Notifier
	perHour int
	now     func() time.Time

	mu   sync.Mutex
	sent map[string][]time.Time // per plugin, the last hour's deliveries
}

// NewMessages builds the delivery of app messages; perHour <= 0 means
// DefaultMessagesPerHour.
func NewMessages(m *Manager, n Notifier, perHour int, now func() time.Time) *Messages {
	if perHour <= 0 {
		perHour = DefaultMessagesPerHour
	}
	if now == nil {
		now = time.Now
	}
	return &Messages{m: m, n: n, perHour: perHour, now: now, sent: map[string][]time.Time{}}
}

// Deliver checks name's key and rate and queues text for the owner.
func (s *Messages) Deliver(ctx context.Context, name, key, text string) error {
	p, ok := s.m.get(name)
	if !ok || p.omi == nil || !p.omi.ChatMessages.Enabled || p.appKey == "" ||
		subtle.ConstantTimeCompare([]byte(key), []byte(p.appKey)) != 1 {
		return ErrMessageKey
	}
	if p.held() != nil {
		return ErrMessageHeld
	}
	text = strings.TrimSpace(text)
	if text == "" || utf8.RuneCountInString(text) > maxMessage {
		return ErrMessageText
	}
	now := s.now()
	if wait := s.take(name, now); wait > 0 {
		return &RateLimitedError{RetryAfter: wait}
	}
	msg := notify.Message{Level: notify.Important, Key: "plugin-message:" + name + ":" + randomHex(8),
		Text: fmt.Sprintf("🔌 From plugin %s (its own words, not omnibrain's):\n\n%s", name, text)}
	if err := s.n.Notify(ctx, msg); err != nil {
		s.giveBack(name, now)
		return fmt.Errorf("plugins: message: %w", err)
	}
	return nil
}

// take counts a delivery now, or returns how long until one is allowed.
func (s *Messages) take(name string, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	recent := s.sent[name][:0]
	for _, t := range s.sent[name] {
		if now.Sub(t) < time.Hour {
			recent = append(recent, t)
		}
	}
	if len(recent) >= s.perHour {
		s.sent[name] = recent
		wait := recent[0].Add(time.Hour).Sub(now)
		return max(wait.Round(time.Second), time.Second)
	}
	s.sent[name] = append(recent, now)
	return 0
}

func (s *Messages) giveBack(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.sent[name]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(at) {
			s.sent[name] = append(ts[:i], ts[i+1:]...)
			return
		}
	}
}
