package fakegoogle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Wire types of Gmail v1 (names and encodings from the discovery document:
// historyId and internalDate are int64-as-string, sizes are numbers).

type wireMessage struct {
	ID           string    `json:"id"`
	ThreadID     string    `json:"threadId"`
	LabelIDs     []string  `json:"labelIds,omitempty"`
	Snippet      string    `json:"snippet,omitempty"`
	HistoryID    uint64    `json:"historyId,omitempty,string"`
	InternalDate int64     `json:"internalDate,omitempty,string"`
	Payload      *wirePart `json:"payload,omitempty"`
	SizeEstimate int       `json:"sizeEstimate,omitempty"`
	Raw          string    `json:"raw,omitempty"`
}

type wirePart struct {
	PartID   string       `json:"partId"`
	MimeType string       `json:"mimeType,omitempty"`
	Filename string       `json:"filename"`
	Headers  []wireHeader `json:"headers,omitempty"`
	Body     *wireBody    `json:"body,omitempty"`
	Parts    []*wirePart  `json:"parts,omitempty"`
}

type wireHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type wireBody struct {
	AttachmentID string `json:"attachmentId,omitempty"`
	Size         int    `json:"size"`
	Data         string `json:"data,omitempty"`
}

type wireRef struct {
	ID       string   `json:"id"`
	ThreadID string   `json:"threadId"`
	LabelIDs []string `json:"labelIds,omitempty"`
}

type wireListMessages struct {
	Messages           []wireRef `json:"messages,omitempty"`
	NextPageToken      string    `json:"nextPageToken,omitempty"`
	ResultSizeEstimate int       `json:"resultSizeEstimate"`
}

type wireHistory struct {
	ID              uint64           `json:"id,string"`
	Messages        []wireRef        `json:"messages,omitempty"`
	MessagesAdded   []wireMsgChange  `json:"messagesAdded,omitempty"`
	MessagesDeleted []wireMsgChange  `json:"messagesDeleted,omitempty"`
	LabelsAdded     []wireLabelDelta `json:"labelsAdded,omitempty"`
	LabelsRemoved   []wireLabelDelta `json:"labelsRemoved,omitempty"`
}

type wireMsgChange struct {
	Message wireRef `json:"message"`
}

type wireLabelDelta struct {
	Message  wireRef  `json:"message"`
	LabelIDs []string `json:"labelIds"`
}

type wireListHistory struct {
	History       []wireHistory `json:"history,omitempty"`
	HistoryID     uint64        `json:"historyId,string"`
	NextPageToken string        `json:"nextPageToken,omitempty"`
}

type wireProfile struct {
	EmailAddress  string `json:"emailAddress"`
	MessagesTotal int    `json:"messagesTotal"`
	ThreadsTotal  int    `json:"threadsTotal"`
	HistoryID     uint64 `json:"historyId,string"`
}

// mailbox is the Gmail state.
type mailbox struct {
	mu       sync.Mutex
	email    string
	history  uint64 // the mailbox's current historyId
	floor    uint64 // history older than this answers 404
	nextID   uint64
	msgs     map[string]*mailMessage
	byMsgID  map[string]*mailMessage // Message-ID (no <>) → message, for threading and rfc822msgid:
	records  []historyRecord
	sent     []SentMessage
	corrupts map[string]bool
	lagSent  bool // messages.list does not find sent mail yet
}

type mailMessage struct {
	id, threadID string
	labels       []string
	raw          []byte
	internal     int64 // unix ms
	historyID    uint64
	msgID        string
	payload      *wirePart
	snippet      string
	from         string
	deleted      bool
}

type historyRecord struct {
	id            uint64
	added         *mailMessage
	deleted       *mailMessage
	labelsAdded   []string
	labelsRemoved []string
	labelMsg      *mailMessage
}

func newMailbox(email string) *mailbox {
	return &mailbox{email: email, history: 1000, nextID: 1, msgs: map[string]*mailMessage{}, byMsgID: map[string]*mailMessage{}, corrupts: map[string]bool{}}
}

// MessageOptions describe a message added to the mailbox.
type MessageOptions struct {
	// Labels default to INBOX and UNREAD, or SENT when the message is from
	// the mailbox owner.
	Labels   []string
	ThreadID string // default: the thread of a message it references, else a new one
	// InternalDate defaults to the Date header, else the server clock.
	InternalDate time.Time
}

// Added identifies a message the fake stored.
type Added struct {
	ID        string
	ThreadID  string
	HistoryID uint64
}

// AddMessage stores raw RFC 822 bytes as a new message (as delivery does)
// and records a messageAdded history entry. Like Gmail it accepts
// malformed mail.
func (s *Server) AddMessage(raw []byte, o MessageOptions) Added {
	return s.mail.add(raw, o, s.now())
}

func (m *mailbox) add(raw []byte, o MessageOptions, now time.Time) Added {
	hs, body := splitMessage(raw)
	payload := buildPart(hs, body, "", 0)
	msg := &mailMessage{
		raw:     raw,
		payload: payload,
		snippet: snippetOf(payload),
		msgID:   trimAngle(headerValue(hs, "Message-ID")),
	}
	if a, err := mail.ParseAddress(headerValue(hs, "From")); err == nil {
		msg.from = strings.ToLower(a.Address)
	}
	switch {
	case !o.InternalDate.IsZero():
		msg.internal = o.InternalDate.UnixMilli()
	default:
		if t, err := mail.ParseDate(headerValue(hs, "Date")); err == nil {
			msg.internal = t.UnixMilli()
		} else {
			msg.internal = now.UnixMilli()
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	msg.id = fmt.Sprintf("%016x", 0x18c0000000000000+m.nextID)
	m.nextID++
	msg.labels = o.Labels
	if msg.labels == nil {
		if msg.from == strings.ToLower(m.email) {
			msg.labels = []string{"SENT"}
		} else {
			msg.labels = []string{"INBOX", "UNREAD"}
		}
	}
	msg.threadID = o.ThreadID
	if msg.threadID == "" {
		refs := strings.Fields(headerValue(hs, "References") + " " + headerValue(hs, "In-Reply-To"))
		for i := len(refs) - 1; i >= 0 && msg.threadID == ""; i-- {
			if parent, ok := m.byMsgID[trimAngle(refs[i])]; ok {
				msg.threadID = parent.threadID
			}
		}
	}
	if msg.threadID == "" {
		msg.threadID = msg.id
	}
	m.history++
	msg.historyID = m.history
	m.msgs[msg.id] = msg
	if msg.msgID != "" {
		if _, dup := m.byMsgID[msg.msgID]; !dup {
			m.byMsgID[msg.msgID] = msg
		}
	}
	m.records = append(m.records, historyRecord{id: m.history, added: msg})
	return Added{ID: msg.id, ThreadID: msg.threadID, HistoryID: msg.historyID}
}

func trimAngle(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<"), ">")
}

// LoadMaildir adds every file under dir (sorted by path; a leading mbox
// "From " line stripped) and returns how many it added. Files in a folder
// whose name contains "sent" get the SENT label.
func (s *Server) LoadMaildir(dir string) (int, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") && !strings.EqualFold(d.Name(), "LICENSE") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("fakegoogle: load %s: %w", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return 0, fmt.Errorf("fakegoogle: load %s: %w", p, err)
		}
		raw = StripMboxFrom(raw)
		var o MessageOptions
		if strings.Contains(strings.ToLower(filepath.Dir(p)), "sent") {
			o.Labels = []string{"SENT"}
		}
		s.AddMessage(raw, o)
	}
	return len(paths), nil
}

// StripMboxFrom removes a leading mbox "From " separator line.
func StripMboxFrom(raw []byte) []byte {
	if bytes.HasPrefix(raw, []byte("From ")) {
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			return raw[i+1:]
		}
	}
	return raw
}

// DeleteMessage removes a message (a messageDeleted history entry); a
// later messages.get answers 404.
func (s *Server) DeleteMessage(id string) error {
	m := s.mail
	m.mu.Lock()
	defer m.mu.Unlock()
	msg, ok := m.msgs[id]
	if !ok || msg.deleted {
		return fmt.Errorf("fakegoogle: no message %s", id)
	}
	msg.deleted = true
	m.history++
	m.records = append(m.records, historyRecord{id: m.history, deleted: msg})
	return nil
}

// ModifyLabels adds and removes labels (labelAdded/labelRemoved history).
func (s *Server) ModifyLabels(id string, add, remove []string) error {
	m := s.mail
	m.mu.Lock()
	defer m.mu.Unlock()
	msg, ok := m.msgs[id]
	if !ok || msg.deleted {
		return fmt.Errorf("fakegoogle: no message %s", id)
	}
	for _, l := range add {
		if !slices.Contains(msg.labels, l) {
			msg.labels = append(msg.labels, l)
		}
	}
	msg.labels = slices.DeleteFunc(msg.labels, func(l string) bool { return slices.Contains(remove, l) })
	m.history++
	msg.historyID = m.history
	m.records = append(m.records, historyRecord{id: m.history, labelMsg: msg, labelsAdded: add, labelsRemoved: remove})
	return nil
}

// SetSearchLag makes messages.list miss mail sent through messages.send,
// as Gmail's search does for a moment after a send, until turned off.
func (s *Server) SetSearchLag(on bool) {
	s.mail.mu.Lock()
	defer s.mail.mu.Unlock()
	s.mail.lagSent = on
}

// ExpireHistory makes every historyId issued so far too old: history.list
// from one of them answers 404, as Gmail does after about a week.
func (s *Server) ExpireHistory() {
	m := s.mail
	m.mu.Lock()
	defer m.mu.Unlock()
	m.history++
	m.floor = m.history
}

// CorruptMessage makes messages.get of id answer a body the client cannot
// use (raw that is not base64url, a payload that is not MIME), standing in
// for a malformed answer.
func (s *Server) CorruptMessage(id string) {
	s.mail.mu.Lock()
	defer s.mail.mu.Unlock()
	s.mail.corrupts[id] = true
}

// HistoryID is the mailbox's current historyId.
func (s *Server) HistoryID() uint64 {
	s.mail.mu.Lock()
	defer s.mail.mu.Unlock()
	return s.mail.history
}

// MessageCount is the number of (undeleted) messages in the mailbox.
func (s *Server) MessageCount() int {
	s.mail.mu.Lock()
	defer s.mail.mu.Unlock()
	n := 0
	for _, m := range s.mail.msgs {
		if !m.deleted {
			n++
		}
	}
	return n
}

// SentMessage is one messages.send the fake accepted.
type SentMessage struct {
	ID       string // the id of the stored message
	ThreadID string // the thread it joined
	// RequestThreadID is the threadId the client asked for.
	RequestThreadID string
	Raw             []byte      // the decoded RFC 822 bytes exactly as sent
	Header          mail.Header // parsed headers of Raw
	Upload          bool        // sent through /upload/gmail/v1/…
}

// Sent returns every accepted send, in order.
func (s *Server) Sent() []SentMessage {
	s.mail.mu.Lock()
	defer s.mail.mu.Unlock()
	return append([]SentMessage(nil), s.mail.sent...)
}

func (s *Server) serveGmail(w http.ResponseWriter, r *http.Request, rest string) {
	user, rest, _ := strings.Cut(rest, "/")
	if user != "me" && !strings.EqualFold(user, s.opts.Email) {
		writeGoogleError(w, http.StatusForbidden, "forbidden", "Delegation denied for "+s.opts.Email)
		return
	}
	switch {
	case r.Method == http.MethodGet && rest == "profile":
		s.gmailProfile(w)
	case r.Method == http.MethodGet && rest == "messages":
		s.gmailList(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "messages/") && !strings.Contains(rest[len("messages/"):], "/"):
		s.gmailGet(w, r, rest[len("messages/"):])
	case r.Method == http.MethodGet && rest == "history":
		s.gmailHistory(w, r)
	case r.Method == http.MethodPost && rest == "messages/send":
		var req struct {
			Raw      string `json:"raw"`
			ThreadID string `json:"threadId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeGoogleError(w, http.StatusBadRequest, "parseError", "Invalid JSON payload received. "+err.Error())
			return
		}
		raw, err := decodeBase64URL(req.Raw)
		if err != nil || len(raw) == 0 {
			writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "Invalid value for ByteString: "+truncate(req.Raw, 40))
			return
		}
		s.gmailSend(w, raw, req.ThreadID, false)
	default:
		writeGoogleError(w, http.StatusNotFound, "notFound", fmt.Sprintf("fake gmail: no method %s %s", r.Method, r.URL.Path))
	}
}

// serveGmailUpload serves the media upload path of messages.send
// (uploadType=multipart: JSON metadata + message/rfc822; uploadType=media:
// the message alone).
func (s *Server) serveGmailUpload(w http.ResponseWriter, r *http.Request, rest string) {
	user, rest, _ := strings.Cut(rest, "/")
	if user != "me" && !strings.EqualFold(user, s.opts.Email) {
		writeGoogleError(w, http.StatusForbidden, "forbidden", "Delegation denied for "+s.opts.Email)
		return
	}
	if r.Method != http.MethodPost || rest != "messages/send" {
		writeGoogleError(w, http.StatusNotFound, "notFound", "fake gmail: no upload method "+r.URL.Path)
		return
	}
	switch r.URL.Query().Get("uploadType") {
	case "media":
		raw, _ := io.ReadAll(r.Body)
		s.gmailSend(w, raw, "", true)
	case "multipart":
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/related" {
			writeGoogleError(w, http.StatusBadRequest, "badContent", "multipart upload needs Content-Type multipart/related")
			return
		}
		mr := multipart.NewReader(r.Body, params["boundary"])
		var meta struct {
			ThreadID string `json:"threadId"`
		}
		var raw []byte
		for i := 0; ; i++ {
			part, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				writeGoogleError(w, http.StatusBadRequest, "badContent", "bad multipart body: "+err.Error())
				return
			}
			b, _ := io.ReadAll(part)
			if i == 0 {
				if err := json.Unmarshal(b, &meta); err != nil {
					writeGoogleError(w, http.StatusBadRequest, "parseError", "bad metadata part: "+err.Error())
					return
				}
			} else {
				raw = b
			}
		}
		s.gmailSend(w, raw, meta.ThreadID, true)
	default:
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "fake gmail: uploadType must be media or multipart")
	}
}

func (s *Server) gmailSend(w http.ResponseWriter, raw []byte, threadID string, upload bool) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "Invalid RFC 822 message: "+err.Error())
		return
	}
	var n int
	for _, h := range []string{"To", "Cc", "Bcc"} {
		if v := msg.Header.Get(h); v != "" {
			list, err := mail.ParseAddressList(v)
			if err != nil {
				writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "Invalid "+h+" header")
				return
			}
			n += len(list)
		}
	}
	if n == 0 {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "Recipient address required")
		return
	}
	stored := raw
	if msg.Header.Get("Message-ID") == "" { // Gmail adds one when the client did not
		s.mail.mu.Lock()
		id := fmt.Sprintf("<fake-%d@mail.gmail.com>", s.mail.nextID)
		s.mail.mu.Unlock()
		stored = append([]byte("Message-ID: "+id+"\r\n"), raw...)
	}
	if threadID != "" {
		s.mail.mu.Lock()
		found := false
		for _, m := range s.mail.msgs {
			if m.threadID == threadID && !m.deleted {
				found = true
				break
			}
		}
		s.mail.mu.Unlock()
		if !found {
			writeGoogleError(w, http.StatusNotFound, "notFound", "Requested entity was not found.")
			return
		}
	}
	added := s.mail.add(stored, MessageOptions{Labels: []string{"SENT"}, ThreadID: threadID, InternalDate: s.now()}, s.now())
	s.mail.mu.Lock()
	s.mail.sent = append(s.mail.sent, SentMessage{ID: added.ID, ThreadID: added.ThreadID, RequestThreadID: threadID, Raw: raw, Header: msg.Header, Upload: upload})
	s.mail.mu.Unlock()
	writeJSON(w, http.StatusOK, wireRef{ID: added.ID, ThreadID: added.ThreadID, LabelIDs: []string{"SENT"}})
}

func (s *Server) gmailProfile(w http.ResponseWriter) {
	m := s.mail
	m.mu.Lock()
	defer m.mu.Unlock()
	threads := map[string]bool{}
	n := 0
	for _, msg := range m.msgs {
		if !msg.deleted {
			n++
			threads[msg.threadID] = true
		}
	}
	writeJSON(w, http.StatusOK, wireProfile{EmailAddress: m.email, MessagesTotal: n, ThreadsTotal: len(threads), HistoryID: m.history})
}

// query is a parsed Gmail search (the subset omnibrain uses).
type query struct {
	after, before time.Time
	msgID         string
	labels        []string
	from          string
	anywhere      bool
}

func parseQuery(q string) (query, error) {
	var out query
	for _, term := range strings.Fields(q) {
		key, val, ok := strings.Cut(term, ":")
		if !ok || val == "" {
			return out, fmt.Errorf("fake gmail supports only key:value terms, got %q", term)
		}
		switch strings.ToLower(key) {
		case "after", "before":
			t, err := parseQueryDate(val)
			if err != nil {
				return out, err
			}
			if key == "after" {
				out.after = t
			} else {
				out.before = t
			}
		case "rfc822msgid":
			out.msgID = trimAngle(val)
		case "label", "in":
			switch v := strings.ToUpper(val); v {
			case "ANYWHERE":
				out.anywhere = true
			default:
				out.labels = append(out.labels, v)
			}
		case "from":
			out.from = strings.ToLower(val)
		default:
			return out, fmt.Errorf("fake gmail does not support the search operator %q", key)
		}
	}
	return out, nil
}

// parseQueryDate reads after:/before: values: unix seconds or YYYY/MM/DD
// (taken as UTC midnight here).
func parseQueryDate(v string) (time.Time, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	for _, layout := range []string{"2006/01/02", "2006/1/2", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad date %q in query", v)
}

func (q query) match(m *mailMessage, includeSpamTrash bool, labelIDs []string) bool {
	if m.deleted {
		return false
	}
	if !includeSpamTrash && !q.anywhere && !slices.Contains(q.labels, "SPAM") && !slices.Contains(q.labels, "TRASH") &&
		(slices.Contains(m.labels, "SPAM") || slices.Contains(m.labels, "TRASH")) {
		return false
	}
	for _, l := range append(append([]string(nil), q.labels...), labelIDs...) {
		if !slices.Contains(m.labels, strings.ToUpper(l)) && !slices.Contains(m.labels, l) {
			return false
		}
	}
	if !q.after.IsZero() && m.internal < q.after.UnixMilli() {
		return false
	}
	if !q.before.IsZero() && m.internal >= q.before.UnixMilli() {
		return false
	}
	if q.msgID != "" && m.msgID != q.msgID {
		return false
	}
	if q.from != "" && !strings.Contains(m.from, q.from) {
		return false
	}
	return true
}

func pageParams(r *http.Request, def, max int) (offset, size int, err error) {
	size = def
	if v := r.URL.Query().Get("maxResults"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil || n < 1 {
			return 0, 0, fmt.Errorf("Invalid value for maxResults: %q", v)
		}
		size = min(n, max)
	}
	if v := r.URL.Query().Get("pageToken"); v != "" {
		n, e := strconv.Atoi(strings.TrimPrefix(v, "p"))
		if e != nil || n < 0 || !strings.HasPrefix(v, "p") {
			return 0, 0, fmt.Errorf("Invalid pageToken %q", v)
		}
		offset = n
	}
	return offset, size, nil
}

func (s *Server) gmailList(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.Query().Get("q"))
	if err != nil {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", err.Error())
		return
	}
	offset, size, err := pageParams(r, 100, 500)
	if err != nil {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", err.Error())
		return
	}
	spam := r.URL.Query().Get("includeSpamTrash") == "true"
	m := s.mail
	m.mu.Lock()
	var hits []*mailMessage
	for _, msg := range m.msgs {
		if m.lagSent && slices.ContainsFunc(m.sent, func(s SentMessage) bool { return s.ID == msg.id }) {
			continue
		}
		if q.match(msg, spam, r.URL.Query()["labelIds"]) {
			hits = append(hits, msg)
		}
	}
	m.mu.Unlock()
	// Newest first, as Gmail lists.
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].internal != hits[j].internal {
			return hits[i].internal > hits[j].internal
		}
		return hits[i].id > hits[j].id
	})
	out := wireListMessages{ResultSizeEstimate: len(hits)}
	end := min(offset+size, len(hits))
	for _, msg := range hits[min(offset, len(hits)):end] {
		out.Messages = append(out.Messages, wireRef{ID: msg.id, ThreadID: msg.threadID})
	}
	if end < len(hits) {
		out.NextPageToken = "p" + strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) gmailGet(w http.ResponseWriter, r *http.Request, id string) {
	m := s.mail
	m.mu.Lock()
	msg, ok := m.msgs[id]
	corrupt := m.corrupts[id]
	m.mu.Unlock()
	if !ok || msg.deleted {
		writeGoogleError(w, http.StatusNotFound, "notFound", "Requested entity was not found.")
		return
	}
	out := wireMessage{
		ID: msg.id, ThreadID: msg.threadID, LabelIDs: msg.labels, Snippet: msg.snippet,
		HistoryID: msg.historyID, InternalDate: msg.internal, SizeEstimate: len(msg.raw),
	}
	switch format := r.URL.Query().Get("format"); format {
	case "", "full":
		out.Payload = msg.payload
		if corrupt {
			out.Payload = &wirePart{MimeType: "text/plain", Body: &wireBody{Data: "%%%not-base64%%%", Size: 3}}
		}
	case "raw":
		out.Raw = base64.URLEncoding.EncodeToString(msg.raw)
		if corrupt {
			out.Raw = "%%%not-base64%%%"
		}
	case "metadata":
		want := r.URL.Query()["metadataHeaders"]
		p := &wirePart{PartID: msg.payload.PartID, MimeType: msg.payload.MimeType, Filename: msg.payload.Filename}
		for _, h := range msg.payload.Headers {
			if len(want) == 0 || slices.ContainsFunc(want, func(n string) bool { return strings.EqualFold(n, h.Name) }) {
				p.Headers = append(p.Headers, h)
			}
		}
		out.Payload = p
	case "minimal":
	default:
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", fmt.Sprintf("Invalid value at 'format' (%q)", format))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) gmailHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, err := strconv.ParseUint(q.Get("startHistoryId"), 10, 64)
	if err != nil {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", "Missing or invalid startHistoryId")
		return
	}
	offset, size, err := pageParams(r, 100, 500)
	if err != nil {
		writeGoogleError(w, http.StatusBadRequest, "invalidArgument", err.Error())
		return
	}
	types := q["historyTypes"]
	labelID := q.Get("labelId")
	m := s.mail
	m.mu.Lock()
	defer m.mu.Unlock()
	if start < m.floor {
		writeGoogleError(w, http.StatusNotFound, "notFound", "Requested entity was not found.")
		return
	}
	var recs []wireHistory
	for _, rec := range m.records {
		if rec.id <= start {
			continue
		}
		var h wireHistory
		h.ID = rec.id
		want := func(t string) bool { return len(types) == 0 || slices.Contains(types, t) }
		var touched *mailMessage
		if rec.added != nil && want("messageAdded") {
			touched = rec.added
			h.MessagesAdded = []wireMsgChange{{Message: ref(rec.added)}}
		}
		if rec.deleted != nil && want("messageDeleted") {
			touched = rec.deleted
			h.MessagesDeleted = []wireMsgChange{{Message: wireRef{ID: rec.deleted.id, ThreadID: rec.deleted.threadID}}}
		}
		if len(rec.labelsAdded) > 0 && want("labelAdded") {
			touched = rec.labelMsg
			h.LabelsAdded = []wireLabelDelta{{Message: ref(rec.labelMsg), LabelIDs: rec.labelsAdded}}
		}
		if len(rec.labelsRemoved) > 0 && want("labelRemoved") {
			touched = rec.labelMsg
			h.LabelsRemoved = []wireLabelDelta{{Message: ref(rec.labelMsg), LabelIDs: rec.labelsRemoved}}
		}
		if touched == nil || (labelID != "" && !slices.Contains(touched.labels, labelID)) {
			continue
		}
		h.Messages = []wireRef{{ID: touched.id, ThreadID: touched.threadID}}
		recs = append(recs, h)
	}
	out := wireListHistory{HistoryID: m.history}
	end := min(offset+size, len(recs))
	out.History = recs[min(offset, len(recs)):end]
	if end < len(recs) {
		out.NextPageToken = "p" + strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, out)
}

func ref(m *mailMessage) wireRef {
	return wireRef{ID: m.id, ThreadID: m.threadID, LabelIDs: append([]string(nil), m.labels...)}
}

// decodeBase64URL accepts base64url with or without padding (and, like
// Gmail, standard base64).
func decodeBase64URL(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
