package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Address is a mailbox: a display name and an address.
type Address struct {
	Email string
	Name  string
}

// Mail is what UpsertMail needs beyond the item to keep contacts and
// threads: the parties with their display names, and whether the owner
// sent it.
type Mail struct {
	MessageID string // without brackets; a mail is counted once per Message-ID
	From      Address
	To, Cc    []Address
	// Outbound is what the caller knows (a sent folder, Gmail's SENT
	// label). Mail from an owner address is outbound whatever it says.
	Outbound bool
}

// maxReplyGap bounds what counts as a reply: a mail weeks after the last
// one in a thread (subject-keyed threads reuse "Hello") is a new topic.
const maxReplyGap = 30 * 24 * time.Hour

// UpsertMail upserts a mail item and, when the item is new, counts it into
// contacts and threads in the same transaction: inbound and outbound
// counts, first/last seen, reply times, and the thread's state. Mail from
// an owner address gets meta "outbound": true before it is stored.
// Re-upserting the same item, or the same Message-ID from another source,
// changes no counts.
func (t *Tx) UpsertMail(it *Item, m Mail, opts UpsertOptions) (UpsertResult, error) {
	from := normAddr(m.From.Email)
	var recipients []Address
	for _, a := range append(slices.Clone(m.To), m.Cc...) {
		if e := normAddr(a.Email); e != "" && e != from && !slices.ContainsFunc(recipients, func(r Address) bool { return r.Email == e }) {
			recipients = append(recipients, Address{Email: e, Name: a.Name})
		}
	}
	owners, err := t.ownerSet(from, recipients)
	if err != nil {
		return UpsertResult{}, err
	}
	outbound := m.Outbound || owners[from]
	if outbound {
		if it.Meta == nil {
			it.Meta = map[string]any{}
		}
		it.Meta["outbound"] = true
	}
	res, err := t.UpsertItem(it, opts)
	if err != nil || !res.Created {
		return res, err
	}
	if err := t.countMail(res.ID, it, m, from, outbound, recipients, owners); err != nil {
		return res, fmt.Errorf("upsert mail %s/%s: %w", it.Source, it.ExternalID, err)
	}
	return res, nil
}

// ownerSet returns which of the addresses are the owner's.
func (t *Tx) ownerSet(from string, recipients []Address) (map[string]bool, error) {
	addrs := []any{from}
	for _, r := range recipients {
		addrs = append(addrs, r.Email)
	}
	own := map[string]bool{}
	for chunk := range slices.Chunk(addrs, MaxVariables) {
		found, err := Collect(t.ctx, t.tx, Value[string], `SELECT address FROM owner_addresses WHERE address IN (`+Placeholders(len(chunk))+`)`, chunk...)
		if err != nil {
			return nil, fmt.Errorf("owner addresses: %w", err)
		}
		for _, a := range found {
			own[a] = true
		}
	}
	return own, nil
}

// mailRow is a counted mail as thread and reply-time logic sees it.
type mailRow struct {
	itemID     int64
	time       int64
	outbound   bool
	sender     string
	recipients string // space-separated
	personal   bool
	bulk       bool
}

// addressed reports whether the mail went to addr.
func (m mailRow) addressed(addr string) bool {
	return addr != "" && slices.Contains(strings.Fields(m.recipients), addr)
}

func (t *Tx) countMail(itemID int64, it *Item, m Mail, from string, outbound bool, recipients []Address, owners map[string]bool) error {
	thread := it.Thread
	if thread == "" {
		thread = "item:" + it.ExternalID
	}
	when := Millis(it.Time)
	bulk := isBulk(it.Meta, from)
	toOwner := false
	for _, r := range recipients {
		toOwner = toOwner || owners[r.Email]
	}
	rcpt := make([]string, 0, len(recipients))
	for _, r := range recipients {
		rcpt = append(rcpt, r.Email)
	}
	row := mailRow{itemID: itemID, time: when, outbound: outbound, sender: from, recipients: strings.Join(rcpt, " "),
		personal: !outbound && !bulk && toOwner, bulk: bulk}
	// The unique Message-ID makes a mail that came by another route
	// (Takeout import, then the Gmail collector) count only once.
	r, err := t.Exec(`INSERT OR IGNORE INTO mail_messages (item_id, message_id, thread, time, outbound, sender, recipients, personal, bulk) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		itemID, m.MessageID, thread, when, outbound, from, row.recipients, row.personal, bulk)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return err
	}

	if outbound {
		var to []Address
		for _, r := range recipients {
			if !owners[r.Email] {
				to = append(to, r)
			}
		}
		if err := t.touchContacts(to, when, false); err != nil {
			return err
		}
	} else if from != "" {
		if err := t.touchContacts([]Address{{Email: from, Name: m.From.Name}}, when, true); err != nil {
			return err
		}
	}
	participants := []string{}
	if from != "" {
		participants = append(participants, from)
	}
	for _, r := range recipients {
		participants = append(participants, r.Email)
	}
	return t.countThreadMail(thread, it.Title, row, participants)
}

// touchContacts counts one mail from (inbound) or to (outbound) each of
// the contacts, in one statement: names are merged by SQLite's JSON
// functions.
func (t *Tx) touchContacts(as []Address, when int64, inbound bool) error {
	if len(as) > MaxVariables {
		if err := t.touchContacts(as[MaxVariables:], when, inbound); err != nil {
			return err
		}
		as = as[:MaxVariables]
	}
	if len(as) == 0 {
		return nil
	}
	in, out, lastIn, lastOut := 0, 1, int64(0), when
	if inbound {
		in, out, lastIn, lastOut = 1, 0, when, 0
	}
	now := Millis(t.now)
	args := make([]any, 0, 10*len(as))
	rows := make([]string, 0, len(as))
	for _, a := range as {
		name := strings.TrimSpace(a.Name)
		names := "[]"
		if name != "" {
			b, _ := json.Marshal([]string{name})
			names = string(b)
		}
		rows = append(rows, `(?, ?, ?, ?, ?, ?, ?, ?, ?, EXISTS (SELECT 1 FROM vip_rules WHERE pattern = ? OR pattern = ?), ?)`)
		_, domain, _ := strings.Cut(a.Email, "@")
		args = append(args, a.Email, name, names, in, out, when, when, lastIn, lastOut, a.Email, "@"+domain, now)
	}
	_, err := t.Exec(`INSERT INTO contacts (address, name, names, inbound, outbound, first_seen, last_seen, last_inbound, last_outbound, vip, updated)
		VALUES `+strings.Join(rows, ", ")+`
		ON CONFLICT (address) DO UPDATE SET
			name = CASE WHEN excluded.name != '' AND excluded.last_seen >= contacts.last_seen THEN excluded.name ELSE contacts.name END,
			names = CASE WHEN excluded.name = '' OR json_array_length(contacts.names) >= 20
					OR EXISTS (SELECT 1 FROM json_each(contacts.names) WHERE value = excluded.name)
				THEN contacts.names ELSE json_insert(contacts.names, '$[#]', excluded.name) END,
			inbound = contacts.inbound + excluded.inbound,
			outbound = contacts.outbound + excluded.outbound,
			first_seen = CASE WHEN contacts.first_seen = 0 THEN excluded.first_seen ELSE MIN(contacts.first_seen, excluded.first_seen) END,
			last_seen = MAX(contacts.last_seen, excluded.last_seen),
			last_inbound = MAX(contacts.last_inbound, excluded.last_inbound),
			last_outbound = MAX(contacts.last_outbound, excluded.last_outbound),
			updated = excluded.updated`, args...)
	return err
}

// isBulk recognises lists, newsletters and automated mail by the meta keys
// of the item conventions and by no-reply senders.
func isBulk(meta map[string]any, from string) bool {
	if metaString(meta, "list_id") != "" || metaString(meta, "list_unsubscribe") != "" {
		return true
	}
	switch metaString(meta, "precedence") {
	case "bulk", "list", "junk":
		return true
	}
	if a := metaString(meta, "auto_submitted"); a != "" && a != "no" {
		return true
	}
	local, _, _ := strings.Cut(from, "@")
	for _, p := range []string{"noreply", "no-reply", "no_reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster", "bounce"} {
		if strings.Contains(local, p) {
			return true
		}
	}
	return false
}

func metaString(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	return strings.ToLower(strings.TrimSpace(s))
}

func normAddr(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// AddOwnerAddress records one of the owner's own addresses (source says
// where it was learned: config, gmail, sent-folder). Mail from it counts
// as outbound from then on.
func (t *Tx) AddOwnerAddress(address, source string) error {
	a := normAddr(address)
	if !strings.Contains(a, "@") {
		return fmt.Errorf("owner address %q is not an email address", address)
	}
	_, err := t.Exec(`INSERT INTO owner_addresses (address, source, created) VALUES (?, ?, ?) ON CONFLICT (address) DO NOTHING`, a, source, Millis(t.now))
	if err != nil {
		return fmt.Errorf("add owner address: %w", err)
	}
	return nil
}

// AddOwnerAddresses records several owner addresses in one transaction.
func (s *Store) AddOwnerAddresses(ctx context.Context, source string, addresses ...string) error {
	return s.Tx(ctx, func(tx *Tx) error {
		for _, a := range addresses {
			if err := tx.AddOwnerAddress(a, source); err != nil {
				return err
			}
		}
		return nil
	})
}

// OwnerAddresses returns the owner's known addresses, sorted.
func (s *Store) OwnerAddresses(ctx context.Context) ([]string, error) {
	out, err := Collect(ctx, s.db, Value[string], `SELECT address FROM owner_addresses ORDER BY address`)
	if err != nil {
		return nil, fmt.Errorf("owner addresses: %w", err)
	}
	return out, nil
}

// Correspondents returns every address the owner has exchanged mail with
// (lower-case, sorted): the addresses a look-alike would imitate.
func (s *Store) Correspondents(ctx context.Context) ([]string, error) {
	out, err := Collect(ctx, s.db, Value[string], `SELECT address FROM contacts WHERE inbound > 0 OR outbound > 0 ORDER BY address`)
	if err != nil {
		return nil, fmt.Errorf("correspondents: %w", err)
	}
	return out, nil
}

// SetVIPRules replaces the configured VIPs (addresses, or "@domain" for a
// whole domain) and recomputes every contact's vip flag.
func (s *Store) SetVIPRules(ctx context.Context, patterns []string) error {
	return s.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(`DELETE FROM vip_rules`); err != nil {
			return fmt.Errorf("set vip rules: %w", err)
		}
		for _, p := range patterns {
			if p = normAddr(p); p == "" {
				continue
			}
			if _, err := tx.Exec(`INSERT OR IGNORE INTO vip_rules (pattern) VALUES (?)`, p); err != nil {
				return fmt.Errorf("set vip rules: %w", err)
			}
		}
		_, err := tx.Exec(`UPDATE contacts SET vip = (vip_manual OR EXISTS (SELECT 1 FROM vip_rules
			WHERE pattern = contacts.address OR pattern = '@' || substr(contacts.address, instr(contacts.address, '@') + 1)))`)
		if err != nil {
			return fmt.Errorf("set vip rules: %w", err)
		}
		return nil
	})
}

// SetVIP marks or unmarks a contact as a VIP by hand (the owner said so),
// creating the contact if it has not been seen yet.
func (t *Tx) SetVIP(address string, vip bool) error {
	a := normAddr(address)
	if !strings.Contains(a, "@") {
		return fmt.Errorf("vip %q is not an email address", address)
	}
	// first/last seen stay 0 until a mail is counted.
	_, err := t.Exec(`INSERT INTO contacts (address, first_seen, last_seen, vip_manual, vip, updated) VALUES (?1, 0, 0, ?3,
			?3 OR EXISTS (SELECT 1 FROM vip_rules WHERE pattern = ?1 OR pattern = '@' || substr(?1, instr(?1, '@') + 1)), ?2)
		ON CONFLICT (address) DO UPDATE SET vip_manual = excluded.vip_manual, updated = excluded.updated,
			vip = (excluded.vip_manual OR EXISTS (SELECT 1 FROM vip_rules WHERE pattern = contacts.address OR pattern = '@' || substr(contacts.address, instr(contacts.address, '@') + 1)))`,
		a, Millis(t.now), vip)
	if err != nil {
		return fmt.Errorf("set vip %s: %w", a, err)
	}
	return nil
}

// Contact is what the owner's mail says about one correspondent.
type Contact struct {
	Address      string    `json:"address"`
	Name         string    `json:"name,omitempty"`
	Names        []string  `json:"names,omitempty"`
	Inbound      int       `json:"inbound"`  // mails from them to the owner
	Outbound     int       `json:"outbound"` // mails from the owner to them
	FirstSeen    time.Time `json:"first_seen"`
	LastSeen     time.Time `json:"last_seen"`
	LastInbound  time.Time `json:"last_inbound,omitzero"`
	LastOutbound time.Time `json:"last_outbound,omitzero"`
	VIP          bool      `json:"vip"`

	// OwnerReplies counts the owner's answers to this contact and
	// OwnerReplyMedian is how long they typically took; TheirReplies and
	// TheirReplyMedian are the same for the contact answering the owner.
	OwnerReplies     int           `json:"owner_replies"`
	OwnerReplyMedian time.Duration `json:"owner_reply_median"`
	TheirReplies     int           `json:"their_replies"`
	TheirReplyMedian time.Duration `json:"their_reply_median"`
}

const contactColumns = `address, name, names, inbound, outbound, first_seen, last_seen, last_inbound, last_outbound, vip`

func scanContact(row Scanner) (*Contact, error) {
	var c Contact
	var names string
	var first, last, lastIn, lastOut int64
	if err := row.Scan(&c.Address, &c.Name, &names, &c.Inbound, &c.Outbound, &first, &last, &lastIn, &lastOut, &c.VIP); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(names), &c.Names); err != nil {
		return nil, fmt.Errorf("contact %s: names: %w", c.Address, err)
	}
	c.FirstSeen, c.LastSeen, c.LastInbound, c.LastOutbound = FromMillis(first), FromMillis(last), FromMillis(lastIn), FromMillis(lastOut)
	return &c, nil
}

// Contact returns the contact with the address (any case).
func (s *Store) Contact(ctx context.Context, address string) (*Contact, error) {
	c, err := scanContact(s.db.QueryRowContext(ctx, `SELECT `+contactColumns+` FROM contacts WHERE address = ?`, normAddr(address)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("contact %s: %w", address, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("contact %s: %w", address, err)
	}
	if err := s.fillReplyTimes(ctx, []*Contact{c}); err != nil {
		return nil, err
	}
	return c, nil
}

// TopContacts returns the contacts the owner deals with most: mails the
// owner sent them weigh double, VIPs first, recent activity breaks ties.
func (s *Store) TopContacts(ctx context.Context, limit int) ([]*Contact, error) {
	if limit <= 0 {
		limit = 20
	}
	out, err := Collect(ctx, s.db, scanContact, `SELECT `+contactColumns+` FROM contacts
		WHERE inbound + outbound > 0 OR vip
		ORDER BY vip DESC, 2 * outbound + inbound DESC, last_seen DESC, address LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("top contacts: %w", err)
	}
	if err := s.fillReplyTimes(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// fillReplyTimes sets the reply counts and medians of the contacts.
func (s *Store) fillReplyTimes(ctx context.Context, cs []*Contact) error {
	if len(cs) == 0 {
		return nil
	}
	byAddr := make(map[string]*Contact, len(cs))
	args := make([]any, len(cs))
	for i, c := range cs {
		byAddr[c.Address] = c
		args[i] = c.Address
	}
	samples := map[string][]int64{}
	err := Each(ctx, s.db, func(r Scanner) error {
		var contact, dir string
		var v int64
		if err := r.Scan(&contact, &dir, &v); err != nil {
			return err
		}
		samples[contact+"\x00"+dir] = append(samples[contact+"\x00"+dir], v)
		return nil
	}, `SELECT contact, direction, ms FROM reply_times WHERE contact IN (`+Placeholders(len(cs))+`)`, args...)
	if err != nil {
		return fmt.Errorf("reply times: %w", err)
	}
	for _, c := range cs {
		own := samples[c.Address+"\x00owner"]
		theirs := samples[c.Address+"\x00contact"]
		c.OwnerReplies, c.OwnerReplyMedian = len(own), median(own)
		c.TheirReplies, c.TheirReplyMedian = len(theirs), median(theirs)
	}
	return nil
}

func median(v []int64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return time.Duration(m) * time.Millisecond
}
