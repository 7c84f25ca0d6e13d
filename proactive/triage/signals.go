package triage

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text signals triage reads. Each returns what it matched, so the
// factor that results can say why.

// phrase is a weighted word or phrase, matched case-insensitively on word
// boundaries.
type phrase struct {
	text   string // lower-case
	weight int
}

func phrases(weight int, list ...string) []phrase {
	out := make([]phrase, 0, len(list))
	for _, p := range list {
		out = append(out, phrase{text: strings.ToLower(p), weight: weight})
	}
	return out
}

// matchPhrases sums the weights of the phrases found in lower (a
// lower-cased text; each phrase counted once) and names them.
func matchPhrases(lower string, list []phrase) (int, []string) {
	total := 0
	var found []string
	for _, p := range list {
		if containsWord(lower, p.text) {
			total += p.weight
			found = append(found, p.text)
		}
	}
	return total, found
}

// containsWord reports whether w occurs in s with no letter or digit
// right before or after it.
func containsWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(w)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWordRune(before) || !isWordRune(rune(w[0]))) && (end == len(s) || !isWordRune(after) || !isWordRune(rune(w[len(w)-1]))) {
			return true
		}
		off = start + 1
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

var urgencyPhrases = append(append(
	phrases(10, "urgent", "asap", "a.s.a.p", "emergency", "immediately", "right away", "time sensitive", "time-sensitive", "top priority", "high priority"),
	phrases(6, "important", "deadline", "critical", "action required", "action needed", "needed today", "overdue", "as soon as possible", "at your earliest convenience")...),
	phrases(4, "reminder", "follow up", "follow-up", "waiting for", "still need")...)

var requestPhrases = append(
	phrases(8, "can you", "could you", "would you", "will you", "can we", "could we", "let me know", "please advise", "please confirm",
		"please review", "please send", "please call", "please reply", "please respond", "please let", "get back to me", "your thoughts",
		"what do you think", "are you available", "do you have", "need you to", "need your", "rsvp", "your approval", "please approve",
		"your feedback", "your input", "any comments", "any thoughts", "please sign", "please provide", "do you want", "would you like"),
	phrases(4, "please", "when can", "how about", "is it possible", "are you")...)

// spamStrong are phrases rarely found outside unsolicited mail; spamWeak
// are common in it but also in newsletters and discussion, so they count
// little together.
var spamStrong = phrases(12, "viagra", "casino", "mortgage rates", "lose weight", "weight loss", "work from home", "make money", "earn money", "extra income",
	"free money", "get paid", "no credit check", "credit card offer", "100% free", "100% guaranteed", "risk free", "risk-free", "money back",
	"act now", "order now", "order today", "call now", "click here", "click below", "limited time", "special promotion", "dear friend",
	"this is not spam", "not spam", "remove yourself", "to be removed", "removal instructions", "opt-out", "opt out", "bulk email",
	"email marketing", "mass email", "millions of email", "million email", "adult", "xxx", "porn", "sexy", "penis", "hgh", "cialis",
	"pharmacy", "prescription", "lowest price", "lowest prices", "best price", "cheap", "satisfaction guaranteed", "no obligation",
	"winner", "you have won", "you've won", "congratulations", "prize", "cash bonus", "double your", "financial freedom",
	"be your own boss", "home based business", "multi-level", "mlm", "investment opportunity", "wire transfer", "bank account",
	"next of kin", "beneficiary", "million dollars", "million usd", "business proposal", "strictly confidential", "nigeria",
	"debt", "refinance", "insurance quote", "free quote", "free trial", "free gift", "gift card", "warez", "unsolicited", "stock pick",
	"hot stock", "penny stock", "cable descrambler", "rolex", "replica", "diploma", "degree program", "meet singles", "dating")

var spamWeak = phrases(4, "free", "guaranteed", "guarantee", "offer", "save up to", "discount", "% off", "deal", "credit", "loan", "income",
	"profit", "cash", "dollars", "investment", "opportunity", "unsubscribe", "subscribe", "promotion", "marketing", "sales", "bonus",
	"amazing", "incredible", "miracle", "secret", "instant", "instantly", "online", "website", "web site", "visit", "buy", "order",
	"act", "now", "click", "money", "here")

var bulkFooterPhrases = phrases(10, "unsubscribe", "to be removed", "you are receiving this", "you received this", "this email was sent to",
	"view this email in your browser", "manage your subscription", "update your preferences", "email preferences", "privacy policy",
	"do not reply to this", "please do not reply", "this is an automated", "automatically generated", "newsletter", "mailing list",
	"to stop receiving", "no longer wish to receive", "all rights reserved", "forward this email", "subscription",
	"newsletters", "you received these", "you are subscribed", "to cancel delivery", "change your e-mail address", "change your email address")

// noReplyLocal are mailboxes that by their name take no answers: never a
// person writing to the owner.
var noReplyLocal = regexp.MustCompile(`(?i)^(no[._-]?reply|do[._-]?not[._-]?reply|donotreply|no\.address|mailer-daemon|postmaster|bounces?|.*-bounces|newsletters?|.*newsletters?|listserv|majordomo)$`)

// bulkLocalParts are sender mailbox names of mass and automated mail.
var bulkLocalParts = regexp.MustCompile(`(?i)^(news|offers?|deals|promo(tions)?|marketing|announce(ments)?|notifications?|notify|alerts?|updates?|digest|mailer|daemon|info|feedback|support|service|customerservice|customer[._-]service|webmaster|admin|owner-.*|.*-admin|.*-request|.*[._-]news|.*[._-]offers?|.*\.announcements|ecenter|enews|e-?news|store-news|subscriptions?)$`)

// bulkDomains are sender domains of mailing services.
var bulkDomains = regexp.MustCompile(`(?i)(^|\.)(mailman\.|lists?\.|listserv\.|enews\.|e-?news\.|news\.|mailer\.|bounce\.|email\.|mail-)`)

// roleLocal are the names of an organisation's team and role mailboxes
// (enron.announcements, executive.office, outlook-migration-team,
// public.relations, sap_security): many people's mail, nobody's own.
var roleLocal = regexp.MustCompile(`(?i)(^|[._-])(announce(ments?)?|communications?|relations|team|office|administration|security|payables|resources)([._-]|$)|^[a-z]*communications$`)

// listRecipient are addresses of distribution lists: their mail reached
// the owner as one of many (dl-ga-all_enron_houston, all.worldwide,
// 20participants@caiso.com, scsettlecontacts, wordoftheday@lists.lexico.com).
var listRecipient = regexp.MustCompile(`(?i)^(dl[._-].*|.*([._-]|^)all([._-].*|$)|.*participants|.*contacts|.*members([._-].*)?|.*subscribers|.*distribution.*|everyone|undisclosed.*)@|@(lists?|listserv)\.`)

// listTag is the tag a mailing list puts before its subjects: "[EDIS] Fire
// weather bulletin", "Re: [ILUG] ...".
var listTag = regexp.MustCompile(`^(?i:(?:re|fwd?|aw)\s*:\s*)*(\[[A-Za-z][\w .-]{1,24}\])`)

// automatedLocal are machine senders whose mail may still matter (alerts,
// receipts), unlike newsletters.
var automatedLocal = regexp.MustCompile(`(?i)^(mailer-daemon|postmaster|daemon|root|cron|alerts?|monitor(ing)?|notifications?|arsystem|system|jira|jenkins|github|noreply|no-reply)$`)

// capsRatio is the share of upper-case letters among the letters of s.
func capsRatio(s string) (ratio float64, letters int) {
	upper := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				upper++
			}
		}
	}
	if letters == 0 {
		return 0, 0
	}
	return float64(upper) / float64(letters), letters
}

// spamSubjectTail finds the random tags spammers append to subjects to
// defeat filters: "...      NTICY", "...  10.132", "... 6801wbRq4-940mJ".
var spamSubjectTail = regexp.MustCompile(`(\s{4,}\S{2,}\s*$)|(\s[A-Za-z]*\d+[A-Za-z]+\d*[A-Za-z\d-]{4,}\s*$)|(\s\d+\.\d+\s*$)`)

var moneyRe = regexp.MustCompile(`\$\s?\d[\d,]*(\.\d\d)?|\d+\s?%|US\$|€\s?\d`)

var urlRe = regexp.MustCompile(`(?i)\bhttps?://|www\.`)

// localPart is the mailbox name of an address.
func localPart(addr string) string {
	l, _, _ := strings.Cut(addr, "@")
	return l
}

// domainOf is the domain of an address.
func domainOf(addr string) string {
	_, d, _ := strings.Cut(addr, "@")
	return d
}

// digitHeavy reports a generated-looking mailbox name ("1.3250.20-wnhgsd").
func digitHeavy(local string) bool {
	digits := 0
	for _, r := range local {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	return digits >= 5 || (len(local) > 20 && digits >= 3)
}

// hasQuestion reports a question in the new text (not in quotes).
func hasQuestion(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, ">") {
			continue
		}
		if strings.Contains(l, "?") && !urlRe.MatchString(l) {
			return true
		}
	}
	return false
}

// excerpt shortens s for a factor's detail.
func excerpt(list []string, n int) string {
	if len(list) > n {
		list = append(list[:n:n], "…")
	}
	return strings.Join(list, ", ")
}
