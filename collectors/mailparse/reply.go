package mailparse

import (
	"regexp"
	"strings"
)

var (
	originalMessage   = regexp.MustCompile(`(?i)^-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original|messaggio originale|oorspronkelijk bericht)\s*-{2,}$`)
	onWrote           = regexp.MustCompile(`(?i)^(on|am|le|el|op|il)\s.*\s(wrote|schrieb|a écrit|escribió|schreef|ha scritto)\s?:$`)
	attribution       = regexp.MustCompile(`(?i)(wrote|writes|said|schrieb|a écrit|escribió|schreef|ha scritto)\s?:$|^quoting\s.+:$`)
	attributionOpener = regexp.MustCompile(`(?i)^(on|am|le|el|op|il|at|quoting)\s`)
	headerFrom        = regexp.MustCompile(`(?i)^\*?(from|von|de|van|da)\s?:\*?\s`)
	headerSent        = regexp.MustCompile(`(?i)^\*?(sent|date|gesendet|datum|envoyé|enviado|verzonden|inviato)\s?:`)
	headerToSubject   = regexp.MustCompile(`(?i)^\*?(to|subject|an|betreff|à|objet|para|asunto|aan|onderwerp|cc)\s?:`)
	lotusOn           = regexp.MustCompile(`(?i)^.{1,160}\son\s+\d{1,2}/\d{1,2}/\d{2,4},?\s+\d{1,2}:\d{2}(:\d{2})?\s*([ap]m)?\s*$`)
	lotusDate         = regexp.MustCompile(`(?i)^\d{1,2}/\d{1,2}/\d{2,4},?\s+\d{1,2}:\d{2}(:\d{2})?\s*([ap]m)?$`)
	separatorLine     = regexp.MustCompile(`^(_{5,}|-{5,}|={5,})$`)
	forwardMarker     = regexp.MustCompile(`(?i)^(-+\s*forwarded by\s.*|-+\s*forwarded message\s*-+|begin forwarded message:|-+\s*forwarded message\s*-*.*)$`)
	listFooter        = regexp.MustCompile(`(?i)mailing list|listinfo|unsubscribe|yahoo! groups|list-request|email is sponsored by`)
	forwardSubject    = regexp.MustCompile(`(?i)^(\[[^\]]*\]\s*)?((re|aw|sv)\s*:\s*)*(fw|fwd|wg|tr)\s*:`)
)

// SplitReply separates the new text of a mail from what it repeats: quoted
// lines ("> …") with their attribution ("On … wrote:"), a quoted message
// introduced by a reply header ("-----Original Message-----", an Outlook
// "From: … Sent: …" block, a Lotus Notes "Name on 05/14/2001 10:14 AM /
// To: …" block as in the Enron mail, "On … wrote:" above an unquoted copy),
// the signature after a "-- " line and mailing-list footers. Inline replies
// keep their new lines. If nothing but quotes would remain, everything is
// the body: the text is never lost to search.
func SplitReply(text string) (body, quoted string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	cut := len(lines)
	for i := range lines {
		if start, ok := replyHeaderAt(lines, i); ok {
			cut = start
			break
		}
	}

	var keep, drop []string
	top := lines[:cut]
	for i := 0; i < len(top); i++ {
		t := strings.TrimSpace(top[i])
		if strings.HasPrefix(t, ">") {
			drop = append(drop, top[i])
			continue
		}
		if n := attributionAt(top, i); n > 0 {
			drop = append(drop, top[i:i+n]...)
			i += n - 1
			continue
		}
		keep = append(keep, top[i])
	}

	sigAt := signatureStart(keep)
	var sig []string
	if sigAt >= 0 {
		sig = keep[sigAt:]
		keep = keep[:sigAt]
	}
	body = strings.TrimSpace(trimSeparators(strings.Join(keep, "\n")))
	if body == "" {
		return strings.TrimSpace(text), ""
	}
	var q []string
	if len(sig) > 0 {
		q = append(q, strings.TrimSpace(strings.Join(sig, "\n")))
	}
	if len(drop) > 0 {
		q = append(q, strings.TrimSpace(strings.Join(drop, "\n")))
	}
	if cut < len(lines) {
		q = append(q, strings.TrimSpace(strings.Join(lines[cut:], "\n")))
	}
	return body, strings.TrimSpace(strings.Join(q, "\n\n"))
}

// isForward reports whether a mail forwards another: its subject says so or
// its text opens with a forward marker. A forward's content is its own
// text, not a quote.
func isForward(subject, text string) bool {
	if forwardSubject.MatchString(strings.TrimSpace(subject)) {
		return true
	}
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		return forwardMarker.MatchString(t) || originalMessage.MatchString(t)
	}
	return false
}

// replyHeaderAt reports whether an unquoted reply header starts at line i,
// and at which line the quoted message begins.
func replyHeaderAt(lines []string, i int) (int, bool) {
	t := strings.TrimSpace(lines[i])
	if t == "" || strings.HasPrefix(t, ">") {
		return 0, false
	}
	if strings.HasPrefix(t, "--") && originalMessage.MatchString(t) {
		return i, true
	}
	if strings.HasPrefix(strings.ToLower(t), "on ") || onWrote.MatchString(t) {
		joined := t
		if !onWrote.MatchString(joined) && i+1 < len(lines) {
			joined = t + " " + strings.TrimSpace(lines[i+1])
		}
		if onWrote.MatchString(joined) && !nextNonEmptyQuoted(lines, i+1) && !nextNonEmptyQuoted(lines, i+2) {
			return i, true
		}
	}
	if strings.Contains(t[:min(len(t), 7)], ":") && headerFrom.MatchString(t) && headerBlockFollows(lines, i, true) {
		return withSeparator(lines, i), true
	}
	if !strings.Contains(t, "/") || !strings.Contains(t, ":") {
		return 0, false // neither Lotus Notes form below can match
	}
	if lotusOn.MatchString(t) && headerBlockFollows(lines, i, false) {
		return i, true
	}
	if lotusDate.MatchString(t) && headerBlockFollows(lines, i, false) {
		if p := prevNonEmpty(lines, i); p >= 0 && i-p <= 2 && len(strings.TrimSpace(lines[p])) < 100 {
			return p, true
		}
		return i, true
	}
	return 0, false
}

// headerBlockFollows looks for the To:/Subject: (and, for Outlook, Sent:)
// lines of a quoted message's header in the few lines after i.
func headerBlockFollows(lines []string, i int, needSent bool) bool {
	sent, to := !needSent, false
	for j := i + 1; j < len(lines) && j <= i+6; j++ {
		t := strings.TrimSpace(lines[j])
		switch {
		case headerSent.MatchString(t):
			sent = true
		case headerToSubject.MatchString(t):
			to = true
		}
	}
	return sent && to
}

// withSeparator moves a header's start up over a separator line above it
// (Outlook puts a rule of underscores before "From:").
func withSeparator(lines []string, i int) int {
	if p := prevNonEmpty(lines, i); p >= 0 && i-p <= 2 && separatorLine.MatchString(strings.TrimSpace(lines[p])) {
		return p
	}
	return i
}

// attributionAt returns how many lines (1 or 2) of attribution start at i
// when quoted lines follow them; 0 otherwise.
func attributionAt(lines []string, i int) int {
	t := strings.TrimSpace(lines[i])
	if t == "" || len(t) > 200 {
		return 0
	}
	// Every attribution ends with a colon: check that before any regexp.
	if strings.HasSuffix(t, ":") && nextNonEmptyQuoted(lines, i+1) && attribution.MatchString(t) {
		return 1
	}
	if i+1 < len(lines) {
		next := strings.TrimSpace(lines[i+1])
		if strings.HasSuffix(next, ":") && len(t)+len(next) < 200 && nextNonEmptyQuoted(lines, i+2) &&
			attributionOpener.MatchString(t) && !attribution.MatchString(t) && attribution.MatchString(t+" "+next) {
			return 2
		}
	}
	return 0
}

func nextNonEmptyQuoted(lines []string, from int) bool {
	for j := from; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if t != "" {
			return strings.HasPrefix(t, ">")
		}
	}
	return false
}

func prevNonEmpty(lines []string, i int) int {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) != "" {
			return j
		}
	}
	return -1
}

// signatureStart finds where a signature or list footer begins in the new
// text: the last "-- " delimiter with a short tail, or a rule of
// underscores or dashes followed by mailing-list words. -1 if none.
func signatureStart(lines []string) int {
	const maxTail = 25
	for j := len(lines) - 1; j >= 0 && len(lines)-j <= maxTail+1; j-- {
		l := strings.TrimRight(lines[j], " \t")
		if l == "--" || l == "-- " {
			if hasText(lines[j+1:]) && hasText(lines[:j]) {
				return j
			}
		}
	}
	for j := max(0, len(lines)-maxTail); j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if !separatorLine.MatchString(t) {
			continue
		}
		for k := j + 1; k < len(lines) && k <= j+4; k++ {
			if listFooter.MatchString(lines[k]) {
				if hasText(lines[:j]) {
					return j
				}
				return -1
			}
		}
	}
	return -1
}

func hasText(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return true
		}
	}
	return false
}

// trimSeparators drops rules left dangling at the end of the new text.
func trimSeparators(s string) string {
	for {
		s = strings.TrimRight(s, " \t\n")
		i := strings.LastIndex(s, "\n")
		last := strings.TrimSpace(s[i+1:])
		if last == "" || !separatorLine.MatchString(last) {
			return s
		}
		if i < 0 {
			return ""
		}
		s = s[:i]
	}
}
