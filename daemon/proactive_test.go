package daemon

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/executor"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/store"
)

// The proactive engine is wired: its policy is the one the Telegram
// delivery gets, triage and the scheduler are supervised and healthy
// while the daemon runs, and the API serves briefings and explanations.
func TestProactiveWired(t *testing.T) {
	home := t.TempDir()
	cfg := config.Default(home)
	loc, _ := time.LoadLocation("America/Chicago")
	cfg.Location = loc
	cfg.Owner = config.Owner{Name: "Mike Carson", Emails: []string{"mike.carson@enron.com"}, VIPs: []string{"@vip.example.com"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LLM.BaseURL = "http://" + ln.Addr().String() + "/v1" // no Ollama: no model
	ln.Close()
	ctx := context.Background()
	app, err := Open(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, ok := app.approval.policy.(*proactive.Policy); !ok {
		t.Fatalf("the notification policy is %T, want the proactive engine's", app.approval.policy)
	}
	names := map[string]bool{}
	for _, c := range app.components {
		names[c.Name] = true
	}
	if !names[triage.HealthName] || !names[schedule.HealthName] {
		t.Fatalf("components %v lack proactive and scheduler", names)
	}
	if ex, ok := app.approval.executors.Executor(approval.KindAutomation); !ok {
		t.Error("no executor for the standing rules the patterns propose")
	} else if _, ok := ex.(executor.Automation); !ok {
		t.Errorf("standing rules are executed by %T", ex)
	}
	if !app.proactive.sched.Next(proactive.JobMorning).IsZero() {
		t.Error("the scheduler planned before it runs")
	}

	// A VIP's mail arrives the way a collector stores it; triage decides.
	it := &store.Item{Source: "gmail", ExternalID: "m1", Kind: "email", Thread: "t1", Time: time.Now().Add(-time.Hour),
		Title: "Contract", Body: "Can you sign the contract by Friday?", Sender: "ceo@vip.example.com",
		Meta: map[string]any{"message_id": "m1@vip.example.com", "from": "ceo@vip.example.com", "to": []string{"mike.carson@enron.com"}}}
	err = app.store.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.UpsertMail(it, store.Mail{MessageID: "m1@vip.example.com", From: store.Address{Email: "ceo@vip.example.com"}, To: []store.Address{{Email: "mike.carson@enron.com"}}}, store.UpsertOptions{Event: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, _ := app.Health().Get(triage.HealthName)
		s, _ := app.Health().Get(schedule.HealthName)
		if p.State == health.OK && s.State == health.OK {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("health: proactive %+v, scheduler %+v", p, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if next := app.proactive.sched.Next(proactive.JobMorning); next.IsZero() || next.In(loc).Hour() != 7 {
		t.Errorf("next morning briefing at %v, want 07:00 in the owner's zone", next.In(loc))
	}

	c := api.NewUnixClient(filepath.Join(home, api.SocketName))
	x, err := c.Explain(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(x.Text, "Triage: respond") || !strings.Contains(x.Text, "VIP") || !strings.Contains(x.Text, "configured: @vip.example.com") {
		t.Errorf("explanation:\n%s", x.Text)
	}
	if _, err := c.Explain(ctx, "no-such-thing"); err == nil || !strings.Contains(err.Error(), "no item or proposal") {
		t.Errorf("explaining an unknown id: %v", err)
	}
	b1, err := c.Briefing(ctx, "evening")
	if err != nil || !b1.New || !strings.Contains(b1.Text, "Evening summary") {
		t.Fatalf("first evening briefing %+v %v", b1, err)
	}
	b2, err := c.Briefing(ctx, "evening")
	if err != nil || b2.New || b2.Text != b1.Text {
		t.Errorf("second request made another briefing: %+v %v", b2, err)
	}
	if _, err := c.Briefing(ctx, "hourly"); err == nil {
		t.Error("an unknown kind was accepted")
	}
	// Only evening ones: depending on the hour the test runs, the
	// scheduler may also have caught up today's missed morning briefing.
	list, err := c.Briefings(ctx, "evening", 5)
	if err != nil || len(list) != 1 {
		t.Errorf("stored evening briefings %d %v", len(list), err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The daemon records when it first ran on a home, once: the scheduler
// catches up only a morning briefing missed after it, so a new home is
// not greeted by one whatever the time of day (schedule's
// TestStartCatchesUpTodaysMorningBriefingOnce has the rule).
func TestFirstRunOnAHomeIsRecordedOnce(t *testing.T) {
	cfg := config.Default(t.TempDir())
	cfg.Location = time.UTC
	firstRun := func() string {
		t.Helper()
		app, err := Open(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		v, err := app.store.Meta(context.Background(), firstRunKey)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := firstRun()
	at, err := time.Parse(time.RFC3339Nano, first)
	if err != nil || time.Since(at) > time.Minute || time.Since(at) < 0 {
		t.Fatalf("first run recorded as %q (%v), want the wall clock at the first Open", first, err)
	}
	if again := firstRun(); again != first {
		t.Errorf("the second Open recorded the first run as %q, want %q kept", again, first)
	}
}
