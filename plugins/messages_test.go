package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/internal/fakes/omi"
	"github.com/omnibrain/omnibrain/notify"
)

type notified struct {
	mu   sync.Mutex
	msgs []notify.Message
}

func (n *notified) Notify(_ context.Context, m notify.Message) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, m)
	return nil
}

func TestAppMessagesNeedTheKeyAndAreRateLimited(t *testing.T) {
	app := omi.New(t)
	man := slackLike()
	man.ChatMessages = &omi.ChatMessages{Enabled: true}
	app.SetManifest(man)
	e := newEnv(t)
	addOmi(t, e, app, nil)
	app.SetManifest(slackLike())
	o := e.opts(app.ManifestURL())
	o.Name = "quiet" // no chat_messages
	e.add(t, o)
	key, err := readSecret(filepath.Join(e.root, "slack", AppKeyFile))
	if err != nil || len(key) != 64 {
		t.Fatalf("key %q, %v", key, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "quiet", AppKeyFile)); !os.IsNotExist(err) {
		t.Fatal("a plugin without chat_messages got a key")
	}
	m := e.load(t, Options{})
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	n := &notified{}
	msgs := NewMessages(m, n, 3, func() time.Time { return now })
	ctx := context.Background()

	for name, c := range map[string]struct{ plugin, key, text string }{
		"wrong key":        {"slack", strings.Repeat("0", 64), "hi"},
		"no key":           {"slack", "", "hi"},
		"unknown plugin":   {"nope", key, "hi"},
		"another's key":    {"quiet", key, "hi"},
		"empty message":    {"slack", key, "  "},
		"too long message": {"slack", key, strings.Repeat("x", maxMessage+1)},
	} {
		if err := msgs.Deliver(ctx, c.plugin, c.key, c.text); err == nil {
			t.Errorf("%s: delivered", name)
		}
	}
	for i := range 3 {
		if err := msgs.Deliver(ctx, "slack", key, "build finished"); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		now = now.Add(10 * time.Minute)
	}
	err = msgs.Deliver(ctx, "slack", key, "one too many")
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Minute {
		t.Fatalf("fourth: %v", err)
	}
	if len(n.msgs) != 3 || !strings.Contains(n.msgs[0].Text, "From plugin slack") || !strings.HasSuffix(n.msgs[0].Text, "build finished") ||
		n.msgs[0].Level != notify.Important || n.msgs[0].Key == n.msgs[1].Key {
		t.Fatalf("messages %+v", n.msgs)
	}
	now = now.Add(30 * time.Minute)
	if err := msgs.Deliver(ctx, "slack", key, "later"); err != nil {
		t.Fatalf("after the hour: %v", err)
	}
}
