package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/internal/testutil"
)

// update is a knowledge-update case from a LoCoMo conversation: the owner
// (one of the speakers) states a fact at one turn and a later turn
// changes it. Old and New are how the owner would say it to omnibrain;
// each turn must contain its anchor, which ties the case to the data.
type update struct {
	conv, owner        string
	oldTurn, oldAnchor string
	old                string
	newTurn, newAnchor string
	new                string
	question           string
}

// stays is a fact that a later, related fact must not replace (both true).
type stays struct {
	conv, owner, turn, anchor, text string
}

var locomoUpdates = []update{
	// conv-30, the owner is Jon.
	{"conv-30", "Jon", "D1:2", "banker", "I work as a banker", "D5:10", "banker", "I no longer work as a banker; my dance business is my work now", "what is my work?"},
	{"conv-30", "Jon", "D1:4", "dance studio", "I am starting a dance studio", "D9:1", "students", "My dance studio now has students", "how is my dance studio?"},
	{"conv-30", "Jon", "D2:4", "spot for my dance studio", "I am still looking for a location for my dance studio", "D15:3", "opening a dance studio", "My dance studio now has a location and is opening soon", "where is my dance studio?"},
	{"conv-30", "Jon", "D2:4", "Paris", "My latest trip was to Paris", "D15:1", "Rome", "My latest trip was to Rome", "where was my latest trip?"},
	{"conv-30", "Jon", "D4:13", "dance comp", "Next month I am competing in a dance competition near me", "D8:13", "hosting a dance competition", "Next month I am hosting a dance competition instead of competing", "what am I doing at the dance competition?"},
	{"conv-30", "Jon", "D5:20", "biz", "My dance studio is doing well", "D18:2", "tenuous", "My dance studio is on tenuous ground right now", "how is my dance studio doing?"},
	{"conv-30", "Jon", "D10:7", "low on confidence", "I have been feeling low on confidence lately", "D17:16", "stop me", "I am no longer feeling low on confidence", "how is my confidence?"},
	{"conv-30", "Jon", "D12:12", "business plan", "I am wrapping up my business plan for investors", "D18:10", "pitch to investors", "I have updated my business plan and my pitch to investors", "how is my business plan?"},
	// conv-30, the owner is Gina.
	{"conv-30", "Gina", "D1:3", "Door Dash", "I work at Door Dash", "D6:6", "online clothes store", "I lost my job at Door Dash and now run my online clothes store", "what about my job?"},
	{"conv-30", "Gina", "D2:1", "clothing store", "Customers order from my clothing store in person", "D18:1", "website", "Customers now order from my clothing store's new website", "how do customers order from my store?"},
	{"conv-30", "Gina", "D11:14", "design internship", "I interviewed for a design internship", "D12:1", "fashion internship", "I now have the design internship, part-time in a fashion department", "what about my internship?"},
	// conv-26, the owner is Caroline.
	{"conv-26", "Caroline", "D2:8", "adoption agencies", "I am researching adoption agencies", "D2:12", "LGBTQ+", "I have now chosen my adoption agency, one that helps LGBTQ+ folks", "where am I with the adoption?"},
	{"conv-26", "Caroline", "D13:1", "applied to adoption agencies", "I applied to adoption agencies and await their interviews", "D19:1", "passed the adoption agency interviews", "I have now passed the adoption agency interviews", "where am I with the adoption agencies?"},
	{"conv-26", "Caroline", "D9:12", "art show", "My LGBTQ art show is in August", "D14:33", "art show next month", "My LGBTQ art show is in September", "when is my art show?"},
	{"conv-26", "Caroline", "D5:13", "conference", "I am going to a transgender conference this month", "D7:1", "conference", "I already attended the transgender conference; I felt accepted", "what about the transgender conference?"},
	// conv-26, the owner is Melanie.
	{"conv-26", "Melanie", "D2:7", "camping next month", "Our family camping trip is next month", "D4:8", "campfire", "Our family camping trip was last week, in the mountains", "when is our family camping trip?"},
	{"conv-26", "Melanie", "D4:8", "hike", "Our favorite camping spot is the mountains", "D6:16", "camping at the beach", "Our favorite camping spot is now the beach", "where do we like camping?"},
	{"conv-26", "Melanie", "D5:4", "pottery class", "I go to a pottery class every week", "D17:8", "break from pottery", "I stopped going to pottery class because I got hurt", "do I still do pottery?"},
	{"conv-26", "Melanie", "D2:5", "violin", "The instrument I play is the violin", "D15:26", "clarinet", "The instrument I play is the clarinet", "what instrument do I play?"},
	{"conv-26", "Melanie", "D7:18", "Luna and Oliver", "I have two pets, Luna and Oliver", "D13:4", "Bailey", "I now have three pets: Luna, Oliver and Bailey", "how many pets do I have?"},
}

var locomoStays = []stays{
	{"conv-30", "Jon", "D1:8", "contemporary", "My favorite dance style is contemporary"},
	{"conv-26", "Caroline", "D5:5", "piano", "I am learning the piano"},
	{"conv-26", "Caroline", "D15:21", "acoustic guitar", "I have played acoustic guitar for five years"},
	{"conv-26", "Melanie", "D7:18", "Luna and Oliver", "I have a dog named Luna and a cat named Oliver"},
	{"conv-26", "Melanie", "D13:4", "another cat named Bailey", "I also got another cat named Bailey"},
}

// locomoTurns maps "conv-30 D1:2" to the speaker and text of that turn.
func locomoTurns(t *testing.T) map[string][2]string {
	raw, err := os.ReadFile(testutil.SharedData(t, "locomo/locomo-dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, c := range convs {
		for k, v := range c.Conversation {
			if !strings.HasPrefix(k, "session_") || strings.HasSuffix(k, "date_time") {
				continue
			}
			var turns []struct {
				Speaker string `json:"speaker"`
				DiaID   string `json:"dia_id"`
				Text    string `json:"text"`
			}
			if json.Unmarshal(v, &turns) != nil {
				continue
			}
			for _, tu := range turns {
				out[c.SampleID+" "+tu.DiaID] = [2]string{tu.Speaker, tu.Text}
			}
		}
	}
	return out
}

// turnOrder sorts "D3:12" by session, then turn.
func turnOrder(id string) int {
	s, n, _ := strings.Cut(strings.TrimPrefix(id, "D"), ":")
	a, _ := strconv.Atoi(s)
	b, _ := strconv.Atoi(n)
	return a*1000 + b
}

// Knowledge updates from LoCoMo: each owner's facts are stated in the
// order of the conversation, in one memory, without a model. When a fact
// changes, the newer one wins: the older is superseded, out of the list
// and of the prompt for the case's question, the newer in both. Facts
// that can both be true stay.
func TestLoCoMoKnowledgeUpdates(t *testing.T) {
	turns := locomoTurns(t)
	check := func(conv, owner, turn, anchor string) {
		t.Helper()
		tu, ok := turns[conv+" "+turn]
		if !ok || tu[0] != owner || !strings.Contains(strings.ToLower(tu[1]), strings.ToLower(anchor)) {
			t.Fatalf("%s %s: want %s saying %q, got %q", conv, turn, owner, anchor, tu)
		}
	}
	type event struct {
		at    int
		text  string
		check *update // set on a case's newer fact
	}
	byOwner := map[string][]event{}
	for i := range locomoUpdates {
		u := &locomoUpdates[i]
		check(u.conv, u.owner, u.oldTurn, u.oldAnchor)
		check(u.conv, u.owner, u.newTurn, u.newAnchor)
		if turnOrder(u.newTurn) <= turnOrder(u.oldTurn) && u.newTurn != u.oldTurn {
			t.Fatalf("case %q: the change comes before the fact", u.new)
		}
		k := u.conv + "/" + u.owner
		byOwner[k] = append(byOwner[k], event{turnOrder(u.oldTurn), u.old, nil}, event{turnOrder(u.newTurn) + 1, u.new, u})
	}
	for _, s := range locomoStays {
		check(s.conv, s.owner, s.turn, s.anchor)
		k := s.conv + "/" + s.owner
		byOwner[k] = append(byOwner[k], event{turnOrder(s.turn), s.text, nil})
	}
	if len(locomoUpdates) < 20 {
		t.Fatalf("%d cases; the issue asks for 20 or more", len(locomoUpdates))
	}
	ctx := context.Background()
	passed := 0
	for owner, evs := range byOwner {
		e := newEnv(t, envOpts{})
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
		ids := map[string]int64{}
		for _, ev := range evs {
			res, err := e.m.Add(ctx, AddRequest{Text: ev.text, Source: SourceChat})
			if err != nil {
				t.Fatal(err)
			}
			if res.Merged {
				t.Errorf("%s: %q merged into [%s] %q", owner, ev.text, res.Fact.Ref(), res.Fact.Text)
			}
			ids[ev.text] = res.Fact.ID
			u := ev.check
			if u == nil {
				continue
			}
			old, _ := e.m.Get(ctx, ids[u.old])
			now, _ := e.m.Get(ctx, ids[u.new])
			p := e.prompt(u.question)
			var errs []string
			if old.State != Superseded {
				errs = append(errs, fmt.Sprintf("the older fact is %s", old.State))
			}
			if now.State != Active {
				errs = append(errs, fmt.Sprintf("the newer fact is %s", now.State))
			}
			if !strings.Contains(p, u.new) {
				errs = append(errs, "the newer fact is not in the prompt")
			}
			if strings.Contains(p, u.old) {
				errs = append(errs, "the older fact is in the prompt")
			}
			if len(errs) > 0 {
				t.Errorf("%s %s→%s %q → %q: %s", owner, u.oldTurn, u.newTurn, u.old, u.new, strings.Join(errs, "; "))
				continue
			}
			passed++
		}
		for _, s := range locomoStays {
			if s.conv+"/"+s.owner != owner {
				continue
			}
			if f, _ := e.m.Get(ctx, ids[s.text]); f.State != Active {
				t.Errorf("%s: %q was %s (by [%s]); it is still true", owner, s.text, f.State, Ref(f.SupersededBy))
			}
		}
	}
	t.Logf("%d of %d knowledge updates: the newer fact wins", passed, len(locomoUpdates))
}
