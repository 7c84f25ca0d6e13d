package triage

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// Decision is what triage does with a mail.
type Decision string

const (
	Ignore  Decision = "ignore"  // nothing to do: recorded, not pushed
	Notify  Decision = "notify"  // worth knowing: pushed or batched by level
	Respond Decision = "respond" // the owner should answer: a reply is proposed
)

// Category is what kind of mail it is.
type Category string

const (
	Personal  Category = "personal"  // written to the owner by a person
	Bulk      Category = "bulk"      // lists, newsletters, announcements
	Spam      Category = "spam"      // unsolicited
	Automated Category = "automated" // machines that may still matter: alerts, bounces
	Outbound  Category = "outbound"  // the owner's own mail
)

// Thresholds of the priority score (0..100).
const (
	baseScore      = 40
	notifyAt       = 50 // at or above: notify
	respondAt      = 60 // at or above, personal and asking something: respond
	importantAt    = 70 // at or above: pushed now (important), below: fyi
	criticalAt     = 85 // at or above, with the critical conditions: critical
	uncertainLow   = 42 // the middle band a model may settle
	uncertainHigh  = 58
	spamThreshold  = 30
	bulkThreshold  = 30
	maxPreference  = 30
	urgencyCap     = 15
	footerCap      = 30 // three footer phrases are a list on their own
	spamStrongCap  = 36
	spamWeakCap    = 12
	fastReplyLimit = 4 * time.Hour
)

// Context is what is known about a mail beyond its text.
type Context struct {
	Owner    []string       // the owner's addresses, lower-case
	Location *time.Location // the owner's timezone, for deadlines
	// VIP says the sender is one of the owner's VIPs (config or contact).
	VIP       bool
	VIPReason string
	Contact   *store.Contact // the sender's history; nil if never seen
	Thread    *store.Thread  // the mail's thread; nil if unknown
	// Preferences are the learned or owner-set adjustments that apply
	// (sender and domain), at most one per key.
	Preferences []store.Preference
}

// Result is a scored mail: the decision and everything that explains it.
type Result struct {
	Decision  Decision
	Category  Category
	Score     int
	Level     notify.Level
	Deadline  *Deadline
	Factors   []store.Factor
	Reason    string
	Request   bool // the mail asks something of the owner
	Uncertain bool // in the middle band: a model may settle it
	// SpamScore and BulkScore are the evidence for those categories.
	SpamScore, BulkScore int

	tokens int // model tokens spent on it
}

func (r *Result) add(name string, points int, format string, args ...any) {
	r.Factors = append(r.Factors, store.Factor{Name: name, Points: points, Detail: fmt.Sprintf(format, args...)})
}

// Score triages one mail from its text and context, with no model. It is
// a pure function: the same mail and context give the same result.
func Score(m Mail, c Context) Result {
	var r Result
	if c.Location == nil {
		c.Location = time.UTC
	}
	owner := func(addr string) bool { return slices.Contains(c.Owner, addr) }
	if m.Outbound || owner(m.From) {
		r.Category, r.Decision, r.Level, r.Score = Outbound, Ignore, notify.Silent, 0
		r.add("outbound", 0, "sent by the owner")
		r.Reason = "your own mail"
		return r
	}
	// Gmail's own verdicts: what it filed as spam or the owner already
	// threw away needs nothing from us, whoever sent it.
	switch {
	case m.HasLabel("SPAM"):
		r.Category, r.Decision, r.Level, r.Score = Spam, Ignore, notify.Silent, 0
		r.add("gmail_spam", 0, "Gmail filed it as spam")
		r.Reason = "in your Gmail spam folder"
		return r
	case m.HasLabel("TRASH"):
		r.Category, r.Decision, r.Level, r.Score = Personal, Ignore, notify.Silent, 0
		r.add("gmail_trash", 0, "already in the trash")
		r.Reason = "you already deleted it"
		return r
	}
	text := strings.ToLower(m.Subject + "\n" + m.Body)
	toOwner := slices.ContainsFunc(m.To, owner)
	ccOwner := !toOwner && slices.ContainsFunc(m.Cc, owner)
	knownCorrespondent := c.Contact != nil && c.Contact.Outbound > 0
	inOwnerThread := c.Thread != nil && c.Thread.Outbound > 0

	facts := evidenceFacts{text: text, isOwner: owner, contact: c.Contact, toOwner: toOwner, ccOwner: ccOwner,
		known: knownCorrespondent, ownerThread: inOwnerThread, vip: c.VIP}
	r.SpamScore = spamEvidence(&r, m, facts)
	r.BulkScore = bulkEvidence(&r, m, facts)
	switch {
	case r.SpamScore >= spamThreshold:
		r.Category = Spam
	case r.BulkScore >= bulkThreshold && isAutomated(m):
		r.Category = Automated
	case r.BulkScore >= bulkThreshold:
		r.Category = Bulk
	default:
		r.Category = Personal
	}

	score := baseScore
	r.add("base", baseScore, "starting point")
	addPts := func(name string, pts int, format string, args ...any) {
		score += pts
		r.add(name, pts, format, args...)
	}
	switch r.Category {
	case Spam:
		addPts("spam", -60, "looks like spam (evidence %d)", r.SpamScore)
	case Bulk:
		addPts("bulk", -35, "mass mail (evidence %d)", r.BulkScore)
	case Automated:
		addPts("automated", -20, "sent by a machine (evidence %d)", r.BulkScore)
	}

	// Who sent it.
	if c.VIP {
		addPts("vip", 25, "%s is a VIP (%s)", m.From, c.VIPReason)
	}
	switch {
	case c.Contact != nil && c.Contact.Outbound >= 5:
		addPts("correspondent", 15, "you wrote to %s %d times", m.From, c.Contact.Outbound)
	case knownCorrespondent:
		addPts("correspondent", 10, "you wrote to %s %d time(s)", m.From, c.Contact.Outbound)
	case c.Contact != nil && c.Contact.Inbound >= 3:
		addPts("known_sender", 3, "%s wrote %d times, you never answered", m.From, c.Contact.Inbound)
	case !c.VIP:
		addPts("unknown_sender", -5, "no history with %s", m.From)
	}
	if c.Contact != nil && c.Contact.OwnerReplies >= 2 && c.Contact.OwnerReplyMedian > 0 && c.Contact.OwnerReplyMedian <= fastReplyLimit {
		addPts("answers_fast", 5, "you usually answer %s within %s", m.From, roundDuration(c.Contact.OwnerReplyMedian))
	}

	// To whom.
	switch {
	case toOwner && m.Recipients() <= 3:
		addPts("to_you", 10, "addressed to you")
	case toOwner:
		addPts("to_you", 5, "addressed to you among %d recipients", m.Recipients())
	case ccOwner:
		addPts("cc_you", -3, "you are only in Cc")
	case len(c.Owner) > 0 && m.Recipients() > 0:
		addPts("not_to_you", -10, "not addressed to any of your addresses")
	}
	if m.Recipients() > 15 {
		addPts("many_recipients", -10, "sent to %d recipients", m.Recipients())
	}

	// The conversation.
	if inOwnerThread {
		addPts("your_thread", 10, "you wrote in this thread (%d of %d messages)", c.Thread.Outbound, c.Thread.Messages)
	}
	if c.Thread != nil && c.Thread.Messages >= 4 && m.Time.Sub(c.Thread.FirstTime) < 72*time.Hour {
		addPts("active_thread", 5, "%d messages in %s", c.Thread.Messages, roundDuration(m.Time.Sub(c.Thread.FirstTime)))
	}

	// What it says. Spam shouts urgency too: only mail that is not spam or
	// bulk earns points for it.
	if r.Category != Spam && r.Category != Bulk {
		if pts, found := matchPhrases(text, urgencyPhrases); pts > 0 {
			addPts("urgency", min(pts, urgencyCap), "urgent words: %s", excerpt(found, 4))
		}
		if d, ok := FindDeadline(m.Subject+"\n"+m.Body, m.Time, c.Location); ok {
			r.Deadline = &d
			left := d.Time.Sub(m.Time)
			local := d.Time.In(c.Location).Format("Mon Jan 2 15:04 MST")
			switch {
			case left <= 24*time.Hour:
				addPts("deadline", 20, "deadline %s (%q), within a day", local, d.Phrase)
			case left <= 72*time.Hour:
				addPts("deadline", 12, "deadline %s (%q), within 3 days", local, d.Phrase)
			default:
				addPts("deadline", 5, "deadline %s (%q)", local, d.Phrase)
			}
		}
		reqPts, reqFound := matchPhrases(text, requestPhrases)
		question := hasQuestion(m.Body) || strings.Contains(m.Subject, "?")
		if reqPts >= 8 || (question && reqPts > 0) || (question && (toOwner || inOwnerThread)) {
			r.Request = true
			detail := "asks you something"
			if len(reqFound) > 0 {
				detail += ": " + excerpt(reqFound, 3)
			}
			addPts("request", 10, "%s", detail)
		}
	}

	// What the owner taught us.
	for _, p := range c.Preferences {
		w := int(math.Round(max(-maxPreference, min(maxPreference, p.Weight))))
		if w != 0 {
			addPts("preference", w, "%s (%s, %d observations): %s", p.Key, p.Source, p.Evidence, p.Detail)
		}
	}

	r.Score = max(0, min(100, score))
	r.decide(m, c, knownCorrespondent)
	return r
}

// decide turns the score into a decision and a notification level.
func (r *Result) decide(m Mail, c Context, knownCorrespondent bool) {
	s := r.Score
	switch {
	case r.Category == Spam:
		r.Decision = Ignore
	case r.Category == Personal && r.Request && s >= respondAt:
		r.Decision = Respond
	case s >= notifyAt:
		r.Decision = Notify
	default:
		r.Decision = Ignore
	}
	r.Uncertain = (r.Category == Personal || r.Category == Automated) && s >= uncertainLow && s <= uncertainHigh
	r.Level = levelFor(r.Decision, s)

	// Critical is a small, explainable set: a personal mail from someone
	// who matters, with a deadline within a day or urgent words, scoring
	// high. Spam, bulk and machines are never critical.
	if r.Category == Personal && s >= criticalAt && r.Decision != Ignore {
		important := c.VIP || (c.Contact != nil && c.Contact.Outbound >= 3)
		soon := r.Deadline != nil && r.Deadline.Time.Sub(m.Time) <= 24*time.Hour
		urgent := slices.ContainsFunc(r.Factors, func(f store.Factor) bool { return f.Name == "urgency" && f.Points >= 10 })
		if important && (soon || urgent) {
			r.Level = notify.Critical
			why := "urgent words"
			if soon {
				why = "a deadline within a day"
			}
			r.add("critical", 0, "important sender and %s", why)
		}
	}
	if r.Category == Bulk && r.Level != notify.Silent {
		r.Level = notify.FYI // a list never interrupts
	}
	r.Reason = r.summary(m)
}

func levelFor(d Decision, score int) notify.Level {
	switch {
	case d == Ignore:
		return notify.Silent
	case d == Respond || score >= importantAt:
		return notify.Important
	default:
		return notify.FYI
	}
}

// summary is the one-line reason: the decision and its strongest factors.
func (r *Result) summary(m Mail) string {
	fs := slices.Clone(r.Factors)
	fs = slices.DeleteFunc(fs, func(f store.Factor) bool { return f.Name == "base" || f.Points == 0 && f.Name != "critical" })
	slices.SortStableFunc(fs, func(a, b store.Factor) int { return abs(b.Points) - abs(a.Points) })
	var parts []string
	for _, f := range fs {
		if len(parts) == 3 {
			break
		}
		parts = append(parts, f.Detail)
	}
	return fmt.Sprintf("%s (%s, score %d): %s", r.Decision, r.Category, r.Score, strings.Join(parts, "; "))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// evidenceFacts are what both evidence counts weigh besides the mail
// itself: who the owner is, and what the owner has to do with the sender.
type evidenceFacts struct {
	text        string            // subject and body, lower-case
	isOwner     func(string) bool // an address of the owner's
	contact     *store.Contact    // the sender's history; nil if never seen
	toOwner     bool              // an owner address is in To
	ccOwner     bool              // an owner address is only in Cc
	known       bool              // the owner has written to the sender
	ownerThread bool              // the owner wrote in the mail's thread
	vip         bool              // the sender is a VIP
}

func spamEvidence(r *Result, m Mail, f evidenceFacts) int {
	var parts []string
	total := 0
	add := func(pts int, what string) {
		total += pts
		parts = append(parts, fmt.Sprintf("%s %+d", what, pts))
	}
	if pts, found := matchPhrases(f.text, spamStrong); pts > 0 {
		add(min(pts, spamStrongCap), "spam phrases ("+excerpt(found, 4)+")")
	}
	if pts, found := matchPhrases(f.text, spamWeak); pts > 0 {
		add(min(pts, spamWeakCap), "sales words ("+excerpt(found, 4)+")")
	}
	if ratio, letters := capsRatio(m.Subject); letters >= 10 && ratio >= 0.6 {
		add(12, "shouting subject")
	}
	if strings.Contains(m.Subject, "!!") || strings.Contains(m.Subject, "$") {
		add(8, "!! or $ in subject")
	}
	if spamSubjectTail.MatchString(m.Subject) {
		add(15, "random tag after the subject")
	}
	// Most mail names no money: the cheap check spares the regexp, which
	// has no literal to skip ahead with.
	if money := m.Subject + "\n" + m.Body; strings.ContainsAny(money, "$%€") && len(moneyRe.FindAllStringIndex(money, 3)) >= 2 {
		add(6, "money amounts")
	}
	if m.HTML {
		add(8, "HTML only")
	}
	if m.Recipients() == 0 {
		add(10, "no visible recipient")
	}
	for _, to := range m.To {
		if strings.Contains(to, "undisclosed") || strings.HasPrefix(to, "recipients@") {
			add(10, "undisclosed recipients")
			break
		}
	}
	if digitHeavy(localPart(m.From)) {
		add(10, "generated sender address")
	}
	if len(m.Body) < 400 && urlRe.MatchString(m.Body) {
		add(5, "short mail with a link")
	}
	if f.known {
		add(-40, "you correspond with the sender")
	}
	if f.ownerThread {
		add(-40, "a thread you wrote in")
	}
	if f.vip {
		add(-40, "VIP sender")
	}
	if m.InReplyTo != "" {
		add(-10, "a reply in a conversation")
	}
	listed := m.ListID != "" || m.ListUnsubscribe != "" || m.Precedence == "list" || m.Precedence == "bulk"
	if pts, _ := matchPhrases(f.text, bulkFooterPhrases); pts > 0 && !listed && !f.known && !f.ownerThread {
		add(8, "list footer without list headers")
	}
	switch {
	case listed:
		add(-20, "from a mailing list")
	case m.Recipients() > 0 && !slices.ContainsFunc(m.To, f.isOwner) && !slices.ContainsFunc(m.Cc, f.isOwner):
		add(12, "not addressed to you, and not from a list")
	}
	if total > 0 {
		r.add("spam_evidence", 0, "%s", strings.Join(parts, ", "))
	}
	return total
}

func bulkEvidence(r *Result, m Mail, f evidenceFacts) int {
	var parts []string
	total := 0
	add := func(pts int, what string) {
		total += pts
		parts = append(parts, fmt.Sprintf("%s %+d", what, pts))
	}
	if m.ListID != "" {
		add(30, "List-Id "+m.ListID)
	}
	if m.ListUnsubscribe != "" {
		add(30, "List-Unsubscribe")
	}
	switch m.Precedence {
	case "bulk", "list", "junk":
		add(30, "Precedence: "+m.Precedence)
	}
	if m.AutoSubmitted != "" && m.AutoSubmitted != "no" {
		add(30, "Auto-Submitted: "+m.AutoSubmitted)
	}
	// Gmail's tabs are its own bulk classifier.
	switch {
	case m.HasLabel("CATEGORY_PROMOTIONS"):
		add(30, "Gmail files it under Promotions")
	case m.HasLabel("CATEGORY_SOCIAL"), m.HasLabel("CATEGORY_FORUMS"):
		add(20, "Gmail files it under Social or Forums")
	}
	local := localPart(m.From)
	switch {
	case noReplyLocal.MatchString(local):
		add(30, "sender "+local+"@ takes no replies")
	case bulkLocalParts.MatchString(local):
		add(25, "sender "+local+"@ is a mass or automated mailbox")
	case roleLocal.MatchString(local):
		add(20, "sender "+local+"@ is a team or role mailbox")
	}
	if bulkDomains.MatchString(domainOf(m.From)) {
		add(15, "mailing-service domain "+domainOf(m.From))
	}
	if digitHeavy(local) {
		add(15, "generated sender address")
	}
	// A list's footer is split off as quoted text: read it too.
	if pts, found := matchPhrases(f.text+"\n"+strings.ToLower(m.Quoted), bulkFooterPhrases); pts > 0 {
		add(min(pts, footerCap), "list footer ("+excerpt(found, 3)+")")
	}
	if tag := listTag.FindStringSubmatch(m.Subject); tag != nil {
		add(15, "list tag "+tag[1]+" in the subject")
	}
	switch n := m.Recipients(); {
	case n > 50:
		add(30, fmt.Sprintf("a mass mailing to %d recipients", n))
	case n > 15:
		add(15, fmt.Sprintf("%d recipients", n))
	case n > 8:
		add(10, fmt.Sprintf("%d recipients", n))
	}
	// Someone who writes again and again and never hears back is a
	// report, a newsletter or an announcement, not a conversation.
	if f.contact != nil && f.contact.Inbound >= 5 && f.contact.Outbound == 0 {
		add(15, fmt.Sprintf("%d mails from %s, you never wrote to them", f.contact.Inbound, m.From))
	}
	// Mail that names the owner nowhere came through a list or a Bcc.
	switch {
	case f.toOwner || f.ccOwner:
	case m.Recipients() == 0:
		add(30, "no visible recipient (a Bcc or an undisclosed list)")
	default:
		add(10, "not addressed to you")
		all := append(slices.Clone(m.To), m.Cc...)
		if i := slices.IndexFunc(all, listRecipient.MatchString); i >= 0 {
			add(20, "sent to the list "+all[i])
		}
	}
	if f.known {
		add(-30, "you correspond with the sender")
	}
	if f.ownerThread {
		add(-30, "a thread you wrote in")
	}
	if f.vip {
		add(-30, "VIP sender")
	}
	if total > 0 {
		r.add("bulk_evidence", 0, "%s", strings.Join(parts, ", "))
	}
	return total
}

// AsksSomething reports whether a mail's sender asks a question or makes
// a request in their own words (not in what they forward or quote): what
// makes them wait for an answer.
func AsksSomething(subject, body string) bool {
	own := OwnWords(body)
	if forwardSubject.MatchString(subject) {
		subject = "" // the forwarded mail's subject is not a question to anyone
	}
	pts, _ := matchPhrases(strings.ToLower(subject+"\n"+own), requestPhrases)
	return pts >= 8 || hasQuestion(own) || strings.Contains(subject, "?")
}

var forwardSubject = regexp.MustCompile(`(?i)^\s*(fw|fwd|wg|tr)\s*:`)

// forwardMarker starts the part of a body that is someone else's mail.
var forwardMarker = regexp.MustCompile(`(?im)^\s*(-{2,}\s*original message\s*-{2,}|-{2,}\s*forwarded message\s*-{2,}|begin forwarded message:|-{5,}\s*forwarded by|>?\s*from:\s.*\n\s*>?\s*(sent|date):)`)

// OwnWords is the part of a body before any forwarded or quoted mail.
func OwnWords(body string) string {
	if loc := forwardMarker.FindStringIndex(body); loc != nil {
		return body[:loc[0]]
	}
	return body
}

// isAutomated tells machine mail that may matter (alerts, bounces,
// auto-replies) from newsletters.
func isAutomated(m Mail) bool {
	if m.AutoSubmitted != "" && m.AutoSubmitted != "no" && m.ListID == "" && m.ListUnsubscribe == "" {
		return true
	}
	return automatedLocal.MatchString(localPart(m.From)) && m.ListID == "" && m.ListUnsubscribe == ""
}

func roundDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	default:
		return fmt.Sprintf("%d minutes", int(d.Minutes()))
	}
}
