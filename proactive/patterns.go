package proactive

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// Pattern kinds.
const (
	PatternRecurringSender  = "recurring_sender"  // X writes on Mondays
	PatternRecurringSubject = "recurring_subject" // "Power Indices" from X arrives regularly
	PatternHourHabit        = "hour_habit"        // the owner sends most mail 08–11
	PatternWeekdayHabit     = "weekday_habit"     // the owner sends most mail on Mondays
	PatternAnswersFast      = "answers_fast"      // the owner answers X within the hour
	PatternAlwaysArchives   = "always_archives"   // the owner archives X unread
	PatternRejectsReplies   = "rejects_replies"   // the owner rejects replies proposed to X
)

// Evidence thresholds: below them a regularity is chance, not a pattern.
const (
	patternWindow       = 60 * 24 * time.Hour
	minWeeks            = 3   // distinct weeks a sender wrote in
	minWeekdayShare     = 0.6 // share of a sender's mail on one weekday
	minSubjectRepeats   = 3   // mails with the same subject from one sender
	minOutboundForHabit = 15
	minHourShare        = 0.5 // share of sent mail in the best 3-hour window
	minWeekdayHabit     = 0.35
	minReplies          = 3 // replies to a contact before "answers fast"
	fastMedian          = time.Hour
	minArchived         = 5
	archivedShare       = 0.8
	minRejections       = 2
	maxActivity         = 100000 // mails read per pass
	maxEvidence         = 20
)

// PatternResult is what one pattern pass confirmed.
type PatternResult struct {
	Confirmed int // observations confirmed (new or again)
	New       int // of which new
	Learned   int // preferences learned
	Proposed  int // standing rules proposed for the owner's approval
}

// Patterns looks for regularities with evidence in the last 60 days of
// mail: recurring senders and subjects, the owner's hours and weekdays,
// contacts the owner answers fast, senders the owner always archives, and
// replies the owner keeps rejecting. Confirmed patterns become
// observations with a confidence and the ids of their evidence; the last
// three also teach triage a preference (a score adjustment it shows in
// its factors). A new observation is told once, as FYI, and the first two
// of those three propose a standing rule (mute or promote the sender)
// that, like everything omnibrain would do on its own, waits for the
// owner's approval.
func (e *Engine) Patterns(ctx context.Context) (*PatternResult, error) {
	res, err := e.patterns(ctx)
	if err != nil {
		e.fail(err)
		return nil, fmt.Errorf("proactive: patterns: %w", err)
	}
	return res, nil
}

func (e *Engine) patterns(ctx context.Context) (*PatternResult, error) {
	now := e.o.Now()
	acts, err := e.o.Store.MailActivitySince(ctx, now.Add(-patternWindow), maxActivity)
	if err != nil {
		return nil, err
	}
	var obs []*store.Observation
	var prefs []store.Preference
	obs = append(obs, e.recurringSenders(acts)...)
	obs = append(obs, e.recurringSubjects(acts)...)
	obs = append(obs, e.ownerHabits(acts)...)
	o, p, err := e.answersFast(ctx)
	if err != nil {
		return nil, err
	}
	obs, prefs = append(obs, o...), append(prefs, p...)
	o, p = e.alwaysArchives(acts)
	obs, prefs = append(obs, o...), append(prefs, p...)
	o, p, err = e.rejectedReplies(ctx)
	if err != nil {
		return nil, err
	}
	obs, prefs = append(obs, o...), append(prefs, p...)

	res := &PatternResult{}
	for _, ob := range obs {
		created, err := e.o.Store.UpsertObservation(ctx, ob)
		if err != nil {
			return nil, err
		}
		res.Confirmed++
		if !created || ob.State != "active" {
			continue
		}
		res.New++
		text := "Pattern: " + ob.Summary
		if ob.Suggestion != "" {
			text += " — " + ob.Suggestion
		}
		subject := "pattern:" + ob.Kind + ":" + ob.Key
		chains := graph.NewChains(e.o.Store)
		for _, st := range []graph.Stage{
			{Subject: subject, Chain: graph.Pattern, Name: graph.Observed, At: ob.FirstSeen, Detail: ob.Summary},
			{Subject: subject, Chain: graph.Pattern, Name: graph.PatternConfirmed, Evidence: ob.Evidence, Detail: fmt.Sprintf("confidence %.0f%%", 100*ob.Confidence)},
		} {
			if err := chains.Advance(ctx, st); err != nil {
				return nil, err
			}
		}
		// A new pattern may suggest a standing rule: proposed once, when
		// it is first confirmed, and in force only once approved. With a
		// Brain a run checks the evidence first and explains the rule.
		if d, ok := AutomationFor(ob); ok && e.o.Gate != nil {
			title, id, err := e.proposeRule(ctx, ob, d)
			switch {
			case err != nil:
				e.o.Log.Error("could not propose a standing rule", "pattern", ob.Kind, "key", ob.Key, "err", err)
			case id != "":
				res.Proposed++
				text += fmt.Sprintf("; proposed: %s (%s), for your approval", title, id)
				if err := chains.Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Pattern, Name: graph.AutomationProposed, Detail: "proposal " + id}); err != nil {
					return nil, err
				}
			}
		}
		if err := e.notify(ctx, notify.Message{Level: notify.FYI, Key: "pattern:" + ob.Kind + ":" + ob.Key, Text: text}); err != nil {
			return nil, err
		}
	}
	for _, pr := range prefs {
		if err := e.o.Store.SetPreference(ctx, pr); err != nil {
			return nil, err
		}
		res.Learned++
	}
	return res, nil
}

// proposeRule proposes the rule a pattern suggests: through the Brain's
// run when there is one (it may judge the evidence too weak: no id), the
// template draft otherwise or when no model could take the run.
func (e *Engine) proposeRule(ctx context.Context, ob *store.Observation, d approval.Draft) (title, id string, err error) {
	if e.o.Brain != nil {
		id, err := e.o.Brain.ProposeAutomation(ctx, ob)
		if err == nil {
			return d.Title, id, nil
		}
		if ctx.Err() != nil {
			return "", "", err
		}
		e.o.Log.Warn("the automation run did not decide; proposing the rule as the template says", "pattern", ob.Kind, "err", err)
		d.Reason = "Templated (" + strings.TrimPrefix(withoutModel(err), "no model summary, ") + "): " + d.Reason
	}
	p, err := e.o.Gate.Propose(ctx, d)
	if err != nil {
		return "", "", err
	}
	return p.Title, p.ID, nil
}

func lastIDs(ids []int64) []int64 {
	if len(ids) > maxEvidence {
		ids = ids[len(ids)-maxEvidence:]
	}
	return ids
}

// recurringSenders: someone whose mail lands on the same weekday week after week.
func (e *Engine) recurringSenders(acts []store.MailActivity) []*store.Observation {
	type agg struct {
		ids   []int64
		weeks map[string]bool
		days  [7]int
	}
	by := map[string]*agg{}
	for _, a := range acts {
		if a.Outbound || a.Sender == "" {
			continue
		}
		g := by[a.Sender]
		if g == nil {
			g = &agg{weeks: map[string]bool{}}
			by[a.Sender] = g
		}
		l := a.Time.In(e.o.Location)
		y, w := l.ISOWeek()
		g.ids = append(g.ids, a.ItemID)
		g.weeks[fmt.Sprintf("%d-%d", y, w)] = true
		g.days[l.Weekday()]++
	}
	var out []*store.Observation
	for _, sender := range sortedKeys(by) {
		g := by[sender]
		if len(g.weeks) < minWeeks {
			continue
		}
		best := 0
		for d := range g.days {
			if g.days[d] > g.days[best] {
				best = d
			}
		}
		share := float64(g.days[best]) / float64(len(g.ids))
		if share < minWeekdayShare {
			continue
		}
		conf := share * min(1, float64(len(g.weeks))/4)
		out = append(out, &store.Observation{Kind: PatternRecurringSender, Key: sender, Confidence: round2(conf), Evidence: lastIDs(g.ids),
			Summary: fmt.Sprintf("%s writes on %ss (%d of %d mails, over %d weeks)", sender, time.Weekday(best), g.days[best], len(g.ids), len(g.weeks))})
	}
	return out
}

var digitsRe = regexp.MustCompile(`\d+`)

// normSubject makes a subject comparable across issues: no Re:/Fwd:, no
// numbers or dates, lower case.
func normSubject(s string) string {
	s = strings.ToLower(store.CleanSubject(s))
	s = digitsRe.ReplaceAllString(s, "#")
	return strings.Join(strings.Fields(s), " ")
}

// recurringSubjects: the same subject from the same sender on several days.
func (e *Engine) recurringSubjects(acts []store.MailActivity) []*store.Observation {
	type agg struct {
		subject string
		ids     []int64
		days    map[string]bool
		hours   [24]int
	}
	by := map[string]*agg{}
	for _, a := range acts {
		if a.Outbound || a.Sender == "" {
			continue
		}
		norm := normSubject(a.Subject)
		if len(strings.ReplaceAll(norm, "#", "")) < 4 {
			continue // "hi", "#", "(no subject)"
		}
		key := a.Sender + "|" + norm
		g := by[key]
		if g == nil {
			g = &agg{subject: store.CleanSubject(a.Subject), days: map[string]bool{}}
			by[key] = g
		}
		l := a.Time.In(e.o.Location)
		g.ids = append(g.ids, a.ItemID)
		g.days[l.Format("2006-01-02")] = true
		g.hours[l.Hour()]++
	}
	var out []*store.Observation
	for _, key := range sortedKeys(by) {
		g := by[key]
		if len(g.days) < minSubjectRepeats {
			continue
		}
		sender, _, _ := strings.Cut(key, "|")
		peak := 0
		for h := range g.hours {
			if g.hours[h] > g.hours[peak] {
				peak = h
			}
		}
		summary := fmt.Sprintf("“%s” from %s arrives regularly (%d times on %d days)", g.subject, sender, len(g.ids), len(g.days))
		if float64(g.hours[peak]) >= 0.6*float64(len(g.ids)) {
			summary += fmt.Sprintf(", mostly around %02d:00", peak)
		}
		out = append(out, &store.Observation{Kind: PatternRecurringSubject, Key: key, Summary: summary,
			Confidence: round2(min(1, float64(len(g.days))/6)), Evidence: lastIDs(g.ids)})
	}
	return out
}

// ownerHabits: when the owner writes mail.
func (e *Engine) ownerHabits(acts []store.MailActivity) []*store.Observation {
	var hours [24]int
	var days [7]int
	var ids []int64
	for _, a := range acts {
		if !a.Outbound {
			continue
		}
		l := a.Time.In(e.o.Location)
		hours[l.Hour()]++
		days[l.Weekday()]++
		ids = append(ids, a.ItemID)
	}
	n := len(ids)
	if n < minOutboundForHabit {
		return nil
	}
	var out []*store.Observation
	bestStart, bestSum := 0, 0
	for h := range 24 {
		sum := hours[h] + hours[(h+1)%24] + hours[(h+2)%24]
		if sum > bestSum {
			bestStart, bestSum = h, sum
		}
	}
	if share := float64(bestSum) / float64(n); share >= minHourShare {
		out = append(out, &store.Observation{Kind: PatternHourHabit, Key: "outbound", Confidence: round2(share), Evidence: lastIDs(ids),
			Summary: fmt.Sprintf("you send most of your mail between %02d:00 and %02d:00 (%.0f%% of %d mails)", bestStart, (bestStart+3)%24, 100*share, n)})
	}
	best := 0
	for d := range days {
		if days[d] > days[best] {
			best = d
		}
	}
	if share := float64(days[best]) / float64(n); share >= minWeekdayHabit {
		out = append(out, &store.Observation{Kind: PatternWeekdayHabit, Key: "outbound", Confidence: round2(share), Evidence: lastIDs(ids),
			Summary: fmt.Sprintf("you send the most mail on %ss (%.0f%% of %d mails)", time.Weekday(best), 100*share, n)})
	}
	return out
}

// answersFast: contacts the owner answers within the hour, consistently.
// Triage learns to rank their mail higher.
func (e *Engine) answersFast(ctx context.Context) ([]*store.Observation, []store.Preference, error) {
	times, err := e.o.Store.ReplyTimesByContact(ctx, "owner", minReplies)
	if err != nil {
		return nil, nil, err
	}
	var obs []*store.Observation
	var prefs []store.Preference
	for _, c := range sortedKeys(times) {
		v := times[c]
		med := v[len(v)/2].Took
		if med > fastMedian {
			continue
		}
		ids := make([]int64, 0, len(v))
		for _, r := range v {
			ids = append(ids, r.ItemID)
		}
		obs = append(obs, &store.Observation{Kind: PatternAnswersFast, Key: c, Confidence: round2(min(1, float64(len(v))/6)), Evidence: lastIDs(ids),
			Summary:    fmt.Sprintf("you answer %s fast: median %s over %d replies", c, human(med), len(v)),
			Suggestion: "their mail is ranked higher"})
		prefs = append(prefs, store.Preference{Key: "sender:" + c, Weight: 10, Source: store.PreferenceLearned, Evidence: len(v),
			Detail: fmt.Sprintf("you answer them within %s", human(med))})
	}
	return obs, prefs, nil
}

// alwaysArchives: Gmail mail from a sender the owner takes out of the
// inbox and never answers. Triage learns to rank it lower.
func (e *Engine) alwaysArchives(acts []store.MailActivity) ([]*store.Observation, []store.Preference) {
	type agg struct {
		ids      []int64
		archived int
		labelled int
		answered bool
	}
	by := map[string]*agg{}
	threadSender := map[string]string{}
	for _, a := range acts {
		if a.Outbound {
			if s, ok := threadSender[a.Thread]; ok && by[s] != nil {
				by[s].answered = true
			}
			continue
		}
		if a.Sender == "" {
			continue
		}
		g := by[a.Sender]
		if g == nil {
			g = &agg{}
			by[a.Sender] = g
		}
		threadSender[a.Thread] = a.Sender
		if len(a.Labels) == 0 {
			continue // not from Gmail: nothing is known about archiving
		}
		g.labelled++
		g.ids = append(g.ids, a.ItemID)
		if !slices.Contains(a.Labels, "INBOX") {
			g.archived++
		}
	}
	var obs []*store.Observation
	var prefs []store.Preference
	for _, s := range sortedKeys(by) {
		g := by[s]
		if g.answered || g.labelled < minArchived || float64(g.archived) < archivedShare*float64(g.labelled) {
			continue
		}
		share := float64(g.archived) / float64(g.labelled)
		obs = append(obs, &store.Observation{Kind: PatternAlwaysArchives, Key: s, Confidence: round2(share), Evidence: lastIDs(g.ids),
			Summary:    fmt.Sprintf("you archive mail from %s without answering (%d of %d)", s, g.archived, g.labelled),
			Suggestion: "their mail is ranked lower"})
		prefs = append(prefs, store.Preference{Key: "sender:" + s, Weight: -15, Source: store.PreferenceLearned, Evidence: g.labelled,
			Detail: fmt.Sprintf("you archived %d of %d unanswered", g.archived, g.labelled)})
	}
	return obs, prefs
}

// rejectedReplies: replies proposed to a sender that the owner rejected
// again and again, and never approved.
func (e *Engine) rejectedReplies(ctx context.Context) ([]*store.Observation, []store.Preference, error) {
	if e.o.Gate == nil {
		return nil, nil, nil
	}
	ps, err := e.o.Gate.List(ctx, approval.ListOptions{Limit: 2000})
	if err != nil {
		return nil, nil, err
	}
	type agg struct {
		rejected, approved int
		ids                []int64
	}
	by := map[string]*agg{}
	var ids []int64
	for _, p := range ps {
		if p.Kind == approval.KindReply && p.ItemID != 0 && p.Origin == "proactive" {
			ids = append(ids, p.ItemID)
		}
	}
	items, err := e.o.Store.ItemsByID(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	sender := map[int64]string{}
	for _, it := range items {
		sender[it.ID] = it.Sender
	}
	for _, p := range ps {
		s := sender[p.ItemID]
		if s == "" || p.Kind != approval.KindReply || p.Origin != "proactive" {
			continue
		}
		g := by[s]
		if g == nil {
			g = &agg{}
			by[s] = g
		}
		switch p.State {
		case approval.StateRejected:
			g.rejected++
			g.ids = append(g.ids, p.ItemID)
		case approval.StateApproved, approval.StateExecuting, approval.StateExecuted:
			g.approved++
		}
	}
	var obs []*store.Observation
	var prefs []store.Preference
	for _, s := range sortedKeys(by) {
		g := by[s]
		if g.rejected < minRejections || g.approved > 0 {
			continue
		}
		obs = append(obs, &store.Observation{Kind: PatternRejectsReplies, Key: s, Confidence: round2(min(1, float64(g.rejected)/4)), Evidence: lastIDs(g.ids),
			Summary:    fmt.Sprintf("you rejected all %d replies proposed to %s", g.rejected, s),
			Suggestion: "replies to them are proposed less readily"})
		prefs = append(prefs, store.Preference{Key: "sender:" + s, Weight: -10, Source: store.PreferenceLearned, Evidence: g.rejected,
			Detail: fmt.Sprintf("you rejected %d proposed replies", g.rejected)})
	}
	return obs, prefs, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }
