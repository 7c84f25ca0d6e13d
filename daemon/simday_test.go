package daemon

import (
	"bytes"
	"context"
	"io/fs"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/api"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	fakellm "github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/jobs"
	"github.com/omnibrain/omnibrain/proactive"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/store"
)

// The simulated day: Bill Rapp, an Enron lawyer whose real mailbox
// (rapp-b) is already imported, receives his 50 most recent real mails in
// one day (2001-11-28, Houston), has one meeting to prepare and gets his
// two briefings, with a model that answers every call and counts tokens
// as the provider would (four bytes of request per input token).

var houston = func() *time.Location {
	loc, err := time.LoadLocation("America/Chicago")
	if err != nil {
		panic(err)
	}
	return loc
}()

// enronMessage is one message of the mailbox, by file.
type enronMessage struct {
	rel, msgID string
	date       time.Time
	sent       bool
	raw        []byte
}

// loadRapp reads the rapp-b mailbox and splits it: the 50 most recent
// inbound messages (before December, when the mailbox thins out) are the
// day's mail, every other file is history.
func loadRapp(t testing.TB) (day []enronMessage, history string) {
	t.Helper()
	root := testutil.SharedData(t, "mail/enron/maildir/rapp-b")
	var all []enronMessage
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			return nil
		}
		date, err := m.Header.Date()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		all = append(all, enronMessage{rel: rel, msgID: m.Header.Get("Message-ID"), date: date, raw: raw, sent: strings.Contains(filepath.Dir(rel), "sent")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].date.After(all[j].date) })
	chosen := map[string]bool{}
	cutoff := time.Date(2001, 12, 1, 0, 0, 0, 0, houston)
	for _, m := range all {
		if len(day) == 50 {
			break
		}
		if m.sent || chosen[m.msgID] || !m.date.Before(cutoff) {
			continue
		}
		chosen[m.msgID] = true
		day = append(day, m)
	}
	slices := func(ms []enronMessage) {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].date.Before(ms[j].date) })
	}
	slices(day)
	history = filepath.Join(t.TempDir(), "rapp-b")
	for _, m := range all {
		if chosen[m.msgID] {
			continue
		}
		p := filepath.Join(history, m.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, m.raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return day, history
}

var dateHeader = regexp.MustCompile(`(?m)^Date: .*\r?\n`)

// redate moves a message to a new time, leaving the rest as it was.
func redate(raw []byte, t time.Time) []byte {
	return dateHeader.ReplaceAll(raw, []byte("Date: "+t.Format(time.RFC1123Z)+"\n"))
}

// countingModel answers each kind of request as a sensible model would
// and counts requests and tokens by job, from the tokens the fake reports
// (the provider's count).
type countingModel struct {
	fake *fakellm.OpenAI
	// replyTo are the subjects of the mails a sensible model answers "respond" for.
	replyTo map[string]bool

	mu     sync.Mutex
	calls  map[string]int
	tokens map[string]int
}

func newCountingModel(t testing.TB, replyTo map[string]bool) *countingModel {
	m := &countingModel{fake: fakellm.NewOpenAI(t), replyTo: replyTo, calls: map[string]int{}, tokens: map[string]int{}}
	subject := regexp.MustCompile(`(?m)^Subject: (.*)$`)
	m.fake.Respond(func(r fakellm.Request) fakellm.Turn {
		job, turn := "other", fakellm.Turn{Text: "Noted."}
		switch {
		case strings.Contains(r.System, "You triage one email"):
			job = "triage"
			verdict := `{"decision":"notify","priority":50,"reason":"a colleague keeps you informed"}`
			if s := subject.FindStringSubmatch(r.Messages[len(r.Messages)-1].Content); s != nil && m.replyTo[strings.TrimSpace(s[1])] {
				verdict = `{"decision":"respond","priority":60,"reason":"asks the owner directly"}`
			}
			turn = fakellm.Turn{Text: verdict}
		case strings.Contains(r.System, "Plan for: Draft the owner's reply"):
			job = jobs.DraftReply
			turn = fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "propose_reply", Arguments: `{"body":"Thanks, I will look at it today and get back to you.\n\nBill"}`}}}
		case strings.Contains(r.System, "Plan for: Prepare the owner for the meeting"):
			job = jobs.MeetingPrep
			turn = fakellm.Turn{Text: "Purpose: settle the Transwestern advice protest [2]. Open: Glen's comments on the draft [3]. Bring the CPUC letter."}
		case strings.Contains(r.System, "Plan for: You write the opening"):
			job = jobs.BriefingNarrative
			turn = fakellm.Turn{Text: "A busy day on Transwestern; two replies wait for your approval."}
		}
		// The provider's count: four bytes of request per input token, of
		// answer per output token.
		out := len(turn.Text)
		for _, c := range turn.ToolCalls {
			out += len(c.Name) + len(c.Arguments)
		}
		turn.InputTokens, turn.OutputTokens = max(1, (len(r.Body)+3)/4), max(1, (out+3)/4)
		m.mu.Lock()
		m.calls[job]++
		m.tokens[job] += turn.InputTokens + turn.OutputTokens
		m.mu.Unlock()
		return turn
	})
	return m
}

func TestSimulatedDayCost(t *testing.T) {
	day, history := loadRapp(t)
	start := time.Date(2001, 11, 28, 6, 50, 0, 0, houston)
	clock := &settable{t: start}
	gm := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true, Email: "bill.rapp@enron.com", TimeZone: "America/Chicago", Now: clock.Now})
	// What a sensible model answers "respond" for: the mails that ask Bill
	// something directly (read from the mailbox).
	model := newCountingModel(t, map[string]bool{"RE: TW Request Form": true, "RE: confidentiality agreement": true, "RE: TW Filing": true, "Filing": true})

	cfg := config.Default(t.TempDir())
	cfg.Timezone = "America/Chicago"
	// The scheduler keeps the wall clock: its briefings and pattern passes
	// must not fire during the test (a leap day is years away); the
	// test asks for the day's two briefings itself.
	never := "0 7 29 2 *"
	cfg.Schedule.MorningBriefing, cfg.Schedule.EveningBriefing, cfg.Schedule.WeeklyReview, cfg.Schedule.Patterns = never, never, never, never
	cfg.Owner = config.Owner{Name: "Bill Rapp", Emails: []string{"bill.rapp@enron.com", "brapp@enron.com"}}
	cfg.Google.APIURL, cfg.Google.TokenURL, cfg.Google.AuthURL = gm.URL, gm.TokenURL(), gm.AuthURL()
	cfg.Google.ClientID, cfg.Google.ClientSecret = gm.ClientID(), config.Secret(gm.ClientSecret())
	cfg.LLM.Provider, cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey = "openai", model.fake.URL, "gpt-day", "sk-day"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tok := gm.IssueToken(240 * time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(cfg.Path(google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := Open(ctx, cfg, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	c, stop := api.NewInProcessClient(app.Handler())
	defer stop()
	if _, err := c.Import(ctx, api.ImportRequest{Format: "maildir", Path: history}, nil); err != nil {
		t.Fatal(err)
	}
	meeting := time.Date(2001, 11, 28, 15, 0, 0, 0, houston)
	if _, err := gm.AddEvent("primary", fakegoogle.Event{ID: "twprotest", Summary: "Transwestern advice protest: next steps",
		Start: &fakegoogle.EventDateTime{DateTime: meeting.Format(time.RFC3339)}, End: &fakegoogle.EventDateTime{DateTime: meeting.Add(time.Hour).Format(time.RFC3339)},
		Attendees: []fakegoogle.Attendee{{Email: "bill.rapp@enron.com", Self: true, ResponseStatus: "accepted"},
			{Email: "glen.hass@enron.com", DisplayName: "Glen Hass", ResponseStatus: "accepted"}, {Email: "terry.kowalke@enron.com", DisplayName: "Terry Kowalke", ResponseStatus: "accepted"}}}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()

	// settle waits until triage has handled every stored mail (its drafts
	// included: they are made in the same pass).
	settle := func() {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			evs, err := app.Store().PendingEvents(ctx, triage.DefaultConsumer, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("triage did not finish the day's mail")
			}
			app.proactive.triage.Kick()
			time.Sleep(10 * time.Millisecond)
		}
	}
	collect := func() {
		t.Helper()
		if _, err := app.collectors().CollectNow(ctx, []string{"gmail", "calendar"}); err != nil {
			t.Fatal(err)
		}
		settle()
	}

	clock.Add(10 * time.Minute) // 07:00
	collect()
	if _, err := c.Briefing(ctx, "morning"); err != nil {
		t.Fatal(err)
	}
	// The day's mail arrives from 07:05 to 18:00, in its own order.
	step := (11*time.Hour - 5*time.Minute) / time.Duration(len(day)-1)
	var arrived []string // Gmail ids
	for i, m := range day {
		at := time.Date(2001, 11, 28, 7, 5, 0, 0, houston).Add(time.Duration(i) * step)
		if clock.Now().Before(meeting.Add(-80*time.Minute)) && !at.Before(meeting.Add(-80*time.Minute)) {
			clock.Add(meeting.Add(-80 * time.Minute).Sub(clock.Now()))
			if err := app.proactive.sched.Trigger(ctx, proactive.JobPrep); err != nil {
				t.Fatal(err)
			}
		}
		clock.Add(at.Sub(clock.Now()))
		arrived = append(arrived, gm.AddMessage(redate(m.raw, at), fakegoogle.MessageOptions{InternalDate: at}).ID)
		if i%5 == 4 {
			collect()
		}
	}
	collect()
	clock.Add(time.Date(2001, 11, 28, 22, 0, 0, 0, houston).Sub(clock.Now()))
	evening, err := c.Briefing(ctx, "evening")
	if err != nil {
		t.Fatal(err)
	}

	preps, err := app.Store().MeetingPreps(ctx, start, start.Add(24*time.Hour))
	if err != nil || len(preps) != 1 || !strings.Contains(preps[0].Text, "Sources:\n[2]") {
		t.Errorf("meeting preps %+v, %v: want one written by the model, with its sources", preps, err)
	}
	model.mu.Lock()
	calls, tokens := model.calls, model.tokens
	model.mu.Unlock()
	total := 0
	for _, n := range tokens {
		total += n
	}
	t.Logf("simulated day: %d mails; calls %v; tokens %v; %d in all", len(day), calls, tokens, total)
	if calls[jobs.MeetingPrep] == 0 || calls[jobs.BriefingNarrative] != 2 || calls["other"] != 0 {
		t.Errorf("calls by job %v: want a prep, two narratives and nothing else", calls)
	}
	if !strings.Contains(evening.Narrative, "A busy day") {
		t.Errorf("evening narrative %q", evening.Narrative)
	}

	// The model is asked only for what the heuristics left open: every
	// triage call is a decision recorded as the model's, with its tokens.
	triaged, err := app.Store().TriagedItems(ctx, store.TriageFilter{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	decidedByModel, triageTokens := 0, 0
	for _, ti := range triaged {
		if ti.Triage.Model != "" {
			decidedByModel++
		}
		triageTokens += ti.Triage.Tokens
	}
	if decidedByModel != calls["triage"] || triageTokens != tokens["triage"] {
		t.Errorf("%d triage decisions by the model for %d tokens; the provider saw %d calls, %d tokens",
			decidedByModel, triageTokens, calls["triage"], tokens["triage"])
	}

	// About five mails deserve a reply: each has one drafted by a run in
	// one turn, with its context; nothing else is drafted.
	replies, err := app.Gate().List(ctx, approval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var drafted []*approval.Proposal
	for _, p := range replies {
		if p.Kind != approval.KindReply {
			t.Errorf("unexpected %s proposal %q", p.Kind, p.Title)
			continue
		}
		drafted = append(drafted, p)
		if !strings.Contains(p.Reason, "Drafted with context: items ") {
			t.Errorf("reply %q was not drafted by a run with context: %s", p.Title, p.Reason)
		}
		if tr, err := app.Store().TriageOf(ctx, p.ItemID); err != nil || tr.Decision != "respond" {
			t.Errorf("reply %q drafted for a mail triaged %+v (%v)", p.Title, tr, err)
		}
	}
	for _, p := range drafted {
		t.Logf("drafted: %s", p.Title)
	}
	if n := len(drafted); n < 3 || n > 8 || calls[jobs.DraftReply] != n {
		t.Errorf("%d replies drafted in %d drafting calls, want about 5, one call each", n, calls[jobs.DraftReply])
	}

	// Explain shows each chain: a drafted mail, one that needed no
	// reply, the meeting.
	explain := func(id, want string) {
		t.Helper()
		x, err := c.Explain(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(x.Text, want) {
			t.Errorf("explain %s lacks %q:\n%s", id, want, x.Text)
		}
	}
	if len(drafted) > 0 {
		explain(drafted[0].ID, "Reasoning chain: received → classified → context gathered → reply drafted")
		explain(drafted[0].ID, "draft_reply: done, 1 attempt(s)")
	}
	ignored := ""
	for _, id := range arrived {
		items, err := app.Store().ItemsByExternalID(ctx, id)
		if err != nil || len(items) != 1 {
			t.Fatalf("mail %s: %v %v", id, items, err)
		}
		if tr, err := app.Store().TriageOf(ctx, items[0].ID); err == nil && tr.Decision == "ignore" {
			ignored = id
			break
		}
	}
	if ignored == "" {
		t.Error("no mail of the day was ignored")
	} else {
		explain(ignored, "Reasoning chain: received → classified → no reply needed")
	}
	explain("twprotest", "Reasoning chain: upcoming → context gathered → brief ready")
	explain("twprotest", "meeting_prep: done")

	usage, err := c.Usage(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, r := range usage.Rows {
		recorded += int(r.InputTokens + r.OutputTokens)
	}
	if recorded != total {
		t.Errorf("usage says %d tokens, the provider counted %d", recorded, total)
	}
	if total > 20000 {
		t.Errorf("the simulated day cost %d tokens, over the 20,000 target", total)
	}
}
