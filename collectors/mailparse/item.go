package mailparse

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/omnibrain/omnibrain/store"
)

// ItemOptions say where a message came from; zero fields take defaults.
type ItemOptions struct {
	Source     string   // gmail, mbox, maildir
	ExternalID string   // default: the Message-ID, else "sha256:" + Hash
	Thread     string   // default: ThreadKey()
	Folder     string   // the archive folder it was found in (meta "folder")
	Labels     []string // default: the message's X-Gmail-Labels
	Outbound   bool     // sent by the owner (a sent folder, Gmail's SENT label)
}

// ThreadKey is the thread an archived message belongs to when the source
// has no thread id: Takeout's X-GM-THRID (as the Gmail API's hex threadId,
// so imported and collected mail share threads), else the subject without
// Re:/Fwd: prefixes — the Enron mail has no In-Reply-To or References —,
// else the root of its References, else the message itself.
func (m *Message) ThreadKey() string {
	if m.GmailThreadID != "" {
		return m.GmailThreadID
	}
	if subj := strings.ToLower(store.CleanSubject(m.Subject)); subj != "" {
		sum := sha256.Sum256([]byte(strings.Join(strings.Fields(subj), " ")))
		return "subject:" + hex.EncodeToString(sum[:8])
	}
	switch {
	case len(m.References) > 0:
		return "msg:" + m.References[0]
	case m.InReplyTo != "":
		return "msg:" + m.InReplyTo
	case m.MessageID != "":
		return "msg:" + m.MessageID
	}
	return "msg:" + m.Hash[:16]
}

// Item converts the message into a store item following the mail item
// conventions (kind email, meta keys), plus the parties that
// store.Tx.UpsertMail counts into contacts and threads:
//
//	it, mail := msg.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: id, Thread: threadID})
//	res, err := tx.UpsertMail(it, mail, store.UpsertOptions{Event: true})
func (m *Message) Item(opts ItemOptions) (*store.Item, store.Mail) {
	id := opts.ExternalID
	if id == "" {
		id = m.MessageID
	}
	if id == "" {
		id = "sha256:" + m.Hash
	}
	thread := opts.Thread
	if thread == "" {
		thread = m.ThreadKey()
	}
	labels := opts.Labels
	if labels == nil {
		labels = m.Labels
	}
	meta := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			meta[k] = v
		}
	}
	setList := func(k string, v []string) {
		if len(v) > 0 {
			meta[k] = v
		}
	}
	set("message_id", m.MessageID)
	set("in_reply_to", m.InReplyTo)
	setList("references", m.References)
	set("from", m.From.Email)
	set("from_name", m.From.Name)
	setList("to", emails(m.To))
	setList("cc", emails(m.Cc))
	setList("reply_to", emails(m.ReplyTo))
	setList("labels", labels)
	set("list_id", m.ListID)
	set("list_unsubscribe", m.ListUnsubscribe)
	set("precedence", m.Precedence)
	set("auto_submitted", m.AutoSubmitted)
	if len(m.Attachments) > 0 {
		meta["attachments"] = m.Attachments
	}
	set("folder", opts.Folder)
	set("date_uncertain", m.DateUncertain) // the time is a guess: say so wherever it shows
	set("damaged", m.Damaged)              // a better copy of the message replaces it
	if opts.Outbound {
		meta["outbound"] = true
	}
	if m.HTML {
		meta["html"] = true
	}

	it := &store.Item{
		Source:     opts.Source,
		ExternalID: id,
		Kind:       "email",
		Thread:     thread,
		Time:       m.Date,
		Title:      m.Subject,
		Body:       m.Body,
		Quoted:     m.Quoted,
		Sender:     m.From.Email,
		People:     m.people(),
		Meta:       meta,
		MessageID:  m.MessageID,
	}
	if it.MessageID == "" && m.Fingerprint != "" {
		it.MessageID = "sha256:" + m.Fingerprint // the same bytes from another archive are the same message
	}
	mail := store.Mail{
		MessageID: m.MessageID,
		From:      storeAddress(m.From),
		To:        storeAddresses(m.To),
		Cc:        storeAddresses(m.Cc),
		Outbound:  opts.Outbound,
	}
	return it, mail
}

// people lists the names and addresses of from, to and cc, each once.
func (m *Message) people() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s == "" || seen[strings.ToLower(s)] {
			return
		}
		seen[strings.ToLower(s)] = true
		out = append(out, s)
	}
	for _, list := range [][]Address{{m.From}, m.To, m.Cc} {
		for _, a := range list {
			add(a.Name)
			add(a.Email)
		}
	}
	return out
}

func emails(as []Address) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.Email)
	}
	return out
}

func storeAddress(a Address) store.Address { return store.Address{Email: a.Email, Name: a.Name} }

func storeAddresses(as []Address) []store.Address {
	out := make([]store.Address, 0, len(as))
	for _, a := range as {
		out = append(out, storeAddress(a))
	}
	return out
}
