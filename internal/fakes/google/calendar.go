package fakegoogle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is a Calendar v3 event on the wire (the fields omnibrain uses plus
// the common ones a client may send; unknown fields are rejected, as
// Calendar does).
type Event struct {
	Kind               string          `json:"kind,omitempty"`
	Etag               string          `json:"etag,omitempty"`
	ID                 string          `json:"id,omitempty"`
	Status             string          `json:"status,omitempty"` // confirmed, tentative, cancelled
	HTMLLink           string          `json:"htmlLink,omitempty"`
	Created            string          `json:"created,omitempty"`
	Updated            string          `json:"updated,omitempty"`
	Summary            string          `json:"summary,omitempty"`
	Description        string          `json:"description,omitempty"`
	Location           string          `json:"location,omitempty"`
	ColorID            string          `json:"colorId,omitempty"`
	Creator            *Person         `json:"creator,omitempty"`
	Organizer          *Person         `json:"organizer,omitempty"`
	Start              *EventDateTime  `json:"start,omitempty"`
	End                *EventDateTime  `json:"end,omitempty"`
	EndTimeUnspecified bool            `json:"endTimeUnspecified,omitempty"`
	Recurrence         []string        `json:"recurrence,omitempty"`
	RecurringEventID   string          `json:"recurringEventId,omitempty"`
	OriginalStartTime  *EventDateTime  `json:"originalStartTime,omitempty"`
	Transparency       string          `json:"transparency,omitempty"`
	Visibility         string          `json:"visibility,omitempty"`
	ICalUID            string          `json:"iCalUID,omitempty"`
	Sequence           int64           `json:"sequence,omitempty"`
	Attendees          []Attendee      `json:"attendees,omitempty"`
	AttendeesOmitted   bool            `json:"attendeesOmitted,omitempty"`
	GuestsCanModify    bool            `json:"guestsCanModify,omitempty"`
	HangoutLink        string          `json:"hangoutLink,omitempty"`
	EventType          string          `json:"eventType,omitempty"`
	Reminders          json.RawMessage `json:"reminders,omitempty"`
	ConferenceData     json.RawMessage `json:"conferenceData,omitempty"`
	ExtendedProperties json.RawMessage `json:"extendedProperties,omitempty"`
	Source             json.RawMessage `json:"source,omitempty"`
	Attachments        json.RawMessage `json:"attachments,omitempty"`
}

// EventDateTime is a start or end: Date for all-day events, else DateTime
// (RFC 3339 with offset) and optionally the IANA TimeZone.
type EventDateTime struct {
	Date     string `json:"date,omitempty"`
	DateTime string `json:"dateTime,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
}

// Person is a creator or organizer.
type Person struct {
	ID          string `json:"id,omitempty"`
	Email       string `json:"email,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
	Self        bool   `json:"self,omitempty"`
}

// Attendee is one guest with their answer.
type Attendee struct {
	ID               string `json:"id,omitempty"`
	Email            string `json:"email,omitempty"`
	DisplayName      string `json:"displayName,omitempty"`
	Organizer        bool   `json:"organizer,omitempty"`
	Self             bool   `json:"self,omitempty"`
	Resource         bool   `json:"resource,omitempty"`
	Optional         bool   `json:"optional,omitempty"`
	ResponseStatus   string `json:"responseStatus,omitempty"` // needsAction, declined, tentative, accepted
	Comment          string `json:"comment,omitempty"`
	AdditionalGuests int    `json:"additionalGuests,omitempty"`
}

type wireEvents struct {
	Kind             string  `json:"kind"`
	Etag             string  `json:"etag"`
	Summary          string  `json:"summary"`
	Updated          string  `json:"updated"`
	TimeZone         string  `json:"timeZone"`
	AccessRole       string  `json:"accessRole"`
	DefaultReminders []any   `json:"defaultReminders"`
	NextPageToken    string  `json:"nextPageToken,omitempty"`
	NextSyncToken    string  `json:"nextSyncToken,omitempty"`
	Items            []Event `json:"items"`
}

// CalendarWrite is one insert, update, patch or delete the fake received.
type CalendarWrite struct {
	Method      string // insert, update, patch, delete
	CalendarID  string
	EventID     string
	SendUpdates string // the sendUpdates parameter ("" when absent)
	Body        []byte // the request JSON (nil for delete)
	Status      int    // the HTTP status answered
}

type calendars struct {
	mu         sync.Mutex
	owner      string
	tz         string
	seq        int64 // change counter; sync tokens carry it
	generation int   // bumped by ExpireSyncTokens
	cals       map[string]*calendar
	writes     []CalendarWrite
	nextID     int
}

type calendar struct {
	id     string
	events map[string]*storedEvent
	order  []string
}

type storedEvent struct {
	ev  Event
	seq int64
}

func newCalendars(owner, tz string) *calendars {
	return &calendars{owner: owner, tz: tz, cals: map[string]*calendar{}}
}

func (c *calendars) get(id string) *calendar {
	if id == "primary" {
		id = c.owner
	}
	cal, ok := c.cals[id]
	if !ok {
		cal = &calendar{id: id, events: map[string]*storedEvent{}}
		c.cals[id] = cal
	}
	return cal
}

func (c *calendars) known(id string) bool {
	if id == "primary" || id == c.owner {
		return true
	}
	_, ok := c.cals[id]
	return ok
}

var eventIDPattern = regexp.MustCompile(`^[a-v0-9]{5,}$`) // and at most 1024 long

// AddEvent stores an event in a calendar ("primary" works) as if its
// organizer had created it, filling id, timestamps and defaults. It is not
// recorded as a write.
func (s *Server) AddEvent(calendarID string, ev Event) (Event, error) {
	c := s.cal
	c.mu.Lock()
	defer c.mu.Unlock()
	cal := c.get(calendarID)
	if ev.ID == "" {
		ev.ID = c.newID()
	}
	if _, exists := cal.events[ev.ID]; exists {
		return Event{}, fmt.Errorf("fakegoogle: event %s exists", ev.ID)
	}
	if err := c.complete(&ev, cal, s.now()); err != nil {
		return Event{}, err
	}
	c.put(cal, ev)
	return ev, nil
}

// UpdateEvent changes a stored event (or, for an instance id of a
// recurring event, creates the exception) and marks it changed for sync.
func (s *Server) UpdateEvent(calendarID, id string, change func(*Event)) error {
	c := s.cal
	c.mu.Lock()
	defer c.mu.Unlock()
	cal := c.get(calendarID)
	ev, ok := c.lookup(cal, id)
	if !ok {
		return fmt.Errorf("fakegoogle: no event %s", id)
	}
	change(&ev)
	ev.Sequence++
	ev.Updated = s.now().UTC().Format(time.RFC3339Nano)
	c.put(cal, ev)
	return nil
}

// CancelEvent deletes an event as its organizer would: it stays as a
// cancelled tombstone that incremental sync reports.
func (s *Server) CancelEvent(calendarID, id string) error {
	return s.UpdateEvent(calendarID, id, func(e *Event) { e.Status = "cancelled" })
}

// ExpireSyncTokens makes every sync token issued so far answer 410 Gone.
func (s *Server) ExpireSyncTokens() {
	s.cal.mu.Lock()
	defer s.cal.mu.Unlock()
	s.cal.generation++
}

// GetEvent returns a stored event (exceptions and tombstones included).
func (s *Server) GetEvent(calendarID, id string) (Event, bool) {
	s.cal.mu.Lock()
	defer s.cal.mu.Unlock()
	return s.cal.lookup(s.cal.get(calendarID), id)
}

// CalendarWrites returns every write request received, in order.
func (s *Server) CalendarWrites() []CalendarWrite {
	s.cal.mu.Lock()
	defer s.cal.mu.Unlock()
	return append([]CalendarWrite(nil), s.cal.writes...)
}

func (c *calendars) newID() string {
	c.nextID++
	return fmt.Sprintf("fakeevt%08d", c.nextID) // base32hex: letters a-v and digits
}

func (c *calendars) put(cal *calendar, ev Event) {
	c.seq++
	if _, ok := cal.events[ev.ID]; !ok {
		cal.order = append(cal.order, ev.ID)
	}
	ev.Etag = fmt.Sprintf(`"%d"`, c.seq)
	cal.events[ev.ID] = &storedEvent{ev: ev, seq: c.seq}
}

// complete validates an event and fills what Calendar fills.
func (c *calendars) complete(ev *Event, cal *calendar, now time.Time) error {
	if ev.Start == nil || ev.End == nil || (ev.Start.Date == "" && ev.Start.DateTime == "") || (ev.End.Date == "" && ev.End.DateTime == "") {
		return fmt.Errorf("Missing start or end time.")
	}
	if (ev.Start.Date == "") != (ev.End.Date == "") {
		return fmt.Errorf("Start and end times must either both be date or both be dateTime.")
	}
	start, _, err := c.parseTime(ev.Start)
	if err != nil {
		return err
	}
	end, _, err := c.parseTime(ev.End)
	if err != nil {
		return err
	}
	if end.Before(start) {
		return fmt.Errorf("The specified time range is empty.")
	}
	if len(ev.Recurrence) > 0 {
		if _, err := occurrences(ev.Recurrence, start, ev.Start.Date != "", start.Add(time.Hour), 1); err != nil {
			return fmt.Errorf("Invalid recurrence rule: %v", err)
		}
	}
	ts := now.UTC().Format(time.RFC3339Nano)
	ev.Kind = "calendar#event"
	if ev.Status == "" {
		ev.Status = "confirmed"
	}
	if ev.Created == "" {
		ev.Created = ts
	}
	ev.Updated = ts
	if ev.ICalUID == "" {
		ev.ICalUID = ev.ID + "@google.com"
	}
	ev.HTMLLink = "https://www.google.com/calendar/event?eid=" + base64.RawURLEncoding.EncodeToString([]byte(ev.ID+" "+cal.id))
	if ev.Organizer == nil {
		ev.Organizer = &Person{Email: cal.id, Self: cal.id == c.owner}
	}
	if ev.Creator == nil {
		ev.Creator = &Person{Email: ev.Organizer.Email, Self: ev.Organizer.Email == c.owner}
	}
	for i := range ev.Attendees {
		a := &ev.Attendees[i]
		if a.ResponseStatus == "" {
			a.ResponseStatus = "needsAction"
		}
		a.Self = strings.EqualFold(a.Email, c.owner)
		a.Organizer = strings.EqualFold(a.Email, ev.Organizer.Email)
	}
	return nil
}

// zone is the zone an event's times are expanded in.
func (c *calendars) zone(dt *EventDateTime) *time.Location {
	name := c.tz
	if dt != nil && dt.TimeZone != "" {
		name = dt.TimeZone
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// parseTime reads a start/end; all-day dates are midnight in the zone.
func (c *calendars) parseTime(dt *EventDateTime) (time.Time, bool, error) {
	loc := c.zone(dt)
	if dt.Date != "" {
		t, err := time.ParseInLocation("2006-01-02", dt.Date, loc)
		if err != nil {
			return time.Time{}, true, fmt.Errorf("Invalid date %q", dt.Date)
		}
		return t, true, nil
	}
	t, err := time.Parse(time.RFC3339, dt.DateTime)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("Invalid dateTime %q", dt.DateTime)
	}
	return t.In(loc), false, nil
}

// instanceID is Calendar's id of one occurrence of a recurring event.
func instanceID(master string, start time.Time, allDay bool) string {
	if allDay {
		return master + "_" + start.Format("20060102")
	}
	return master + "_" + start.UTC().Format("20060102T150405Z")
}

// instance builds one generated occurrence of master starting at start.
func (c *calendars) instance(master Event, start time.Time) Event {
	ms, allDay, _ := c.parseTime(master.Start)
	me, _, _ := c.parseTime(master.End)
	inst := master
	inst.Recurrence = nil
	inst.ID = instanceID(master.ID, start, allDay)
	inst.RecurringEventID = master.ID
	if allDay {
		days := int(me.Sub(ms).Hours()/24 + 0.5)
		end := start.AddDate(0, 0, days)
		inst.Start = &EventDateTime{Date: start.Format("2006-01-02")}
		inst.End = &EventDateTime{Date: end.Format("2006-01-02")}
		inst.OriginalStartTime = &EventDateTime{Date: start.Format("2006-01-02")}
	} else {
		end := start.Add(me.Sub(ms))
		inst.Start = &EventDateTime{DateTime: start.Format(time.RFC3339), TimeZone: master.Start.TimeZone}
		inst.End = &EventDateTime{DateTime: end.In(c.zone(master.End)).Format(time.RFC3339), TimeZone: master.End.TimeZone}
		inst.OriginalStartTime = &EventDateTime{DateTime: start.Format(time.RFC3339), TimeZone: master.Start.TimeZone}
	}
	return inst
}

// expand returns the occurrences of master starting before to (exceptions
// applied), at most limit.
func (c *calendars) expand(cal *calendar, master Event, to time.Time, limit int) []Event {
	start, allDay, err := c.parseTime(master.Start)
	if err != nil {
		return nil
	}
	starts, err := occurrences(master.Recurrence, start, allDay, to, limit)
	if err != nil {
		return nil
	}
	out := make([]Event, 0, len(starts))
	for _, st := range starts {
		inst := c.instance(master, st)
		if exc, ok := cal.events[inst.ID]; ok {
			inst = exc.ev
		} else {
			inst.Etag = master.Etag
		}
		out = append(out, inst)
	}
	return out
}

// lookup finds an event by id, generating an unmodified instance of a
// recurring event from its master.
func (c *calendars) lookup(cal *calendar, id string) (Event, bool) {
	if se, ok := cal.events[id]; ok {
		return se.ev, true
	}
	masterID, suffix, ok := strings.Cut(id, "_")
	if !ok {
		return Event{}, false
	}
	master, ok := cal.events[masterID]
	if !ok || len(master.ev.Recurrence) == 0 {
		return Event{}, false
	}
	start, allDay, err := c.parseTime(master.ev.Start)
	if err != nil {
		return Event{}, false
	}
	var want time.Time
	if allDay {
		want, err = time.ParseInLocation("20060102", suffix, start.Location())
	} else {
		want, err = time.Parse("20060102T150405Z", suffix)
	}
	if err != nil {
		return Event{}, false
	}
	for _, inst := range c.expand(cal, master.ev, want.Add(time.Second), 5000) {
		if inst.ID == id {
			return inst, true
		}
	}
	return Event{}, false
}

func (c *calendars) overlaps(ev Event, from, to time.Time) bool {
	start, _, err := c.parseTime(ev.Start)
	if err != nil {
		return false
	}
	end, _, err := c.parseTime(ev.End)
	if err != nil {
		return false
	}
	return (from.IsZero() || end.After(from)) && (to.IsZero() || start.Before(to))
}

func tombstone(ev Event) Event {
	return Event{Kind: "calendar#event", Etag: ev.Etag, ID: ev.ID, Status: "cancelled",
		RecurringEventID: ev.RecurringEventID, OriginalStartTime: ev.OriginalStartTime}
}

func (s *Server) serveCalendar(w http.ResponseWriter, r *http.Request, rest string) {
	calID, rest, _ := strings.Cut(rest, "/")
	if id, err := url.PathUnescape(calID); err == nil {
		calID = id
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 0 || parts[0] != "events" || len(parts) > 2 {
		writeGoogleError(w, http.StatusNotFound, "notFound", "fake calendar: no method "+r.URL.Path)
		return
	}
	s.cal.mu.Lock()
	known := s.cal.known(calID)
	s.cal.mu.Unlock()
	if !known {
		writeGoogleError(w, http.StatusNotFound, "notFound", "Not Found")
		return
	}
	if len(parts) == 1 {
		switch r.Method {
		case http.MethodGet:
			s.calList(w, r, calID)
		case http.MethodPost:
			s.calWrite(w, r, "insert", calID, "")
		default:
			writeGoogleError(w, http.StatusMethodNotAllowed, "methodNotAllowed", "Method not allowed")
		}
		return
	}
	eventID := parts[1]
	switch r.Method {
	case http.MethodGet:
		s.cal.mu.Lock()
		ev, ok := s.cal.lookup(s.cal.get(calID), eventID)
		s.cal.mu.Unlock()
		if !ok {
			writeGoogleError(w, http.StatusNotFound, "notFound", "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, ev)
	case http.MethodPut:
		s.calWrite(w, r, "update", calID, eventID)
	case http.MethodPatch:
		s.calWrite(w, r, "patch", calID, eventID)
	case http.MethodDelete:
		s.calWrite(w, r, "delete", calID, eventID)
	default:
		writeGoogleError(w, http.StatusMethodNotAllowed, "methodNotAllowed", "Method not allowed")
	}
}

func (s *Server) calWrite(w http.ResponseWriter, r *http.Request, method, calID, eventID string) {
	c := s.cal
	c.mu.Lock()
	defer c.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	rec := CalendarWrite{Method: method, CalendarID: calID, EventID: eventID, SendUpdates: r.URL.Query().Get("sendUpdates")}
	if method != "delete" {
		rec.Body = body
	}
	fail := func(code int, reason, msg string) {
		rec.Status = code
		c.writes = append(c.writes, rec)
		writeGoogleError(w, code, reason, msg)
	}
	switch rec.SendUpdates {
	case "", "all", "externalOnly", "none":
	default:
		fail(http.StatusBadRequest, "invalidParameter", "Invalid value for sendUpdates: "+rec.SendUpdates)
		return
	}
	cal := c.get(calID)
	now := s.now()

	var in Event
	if method != "delete" {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			fail(http.StatusBadRequest, "parseError", "Invalid JSON payload received. "+err.Error())
			return
		}
	}
	var out Event
	status := http.StatusOK
	switch method {
	case "insert":
		if in.ID == "" {
			in.ID = c.newID()
		} else if !eventIDPattern.MatchString(in.ID) || len(in.ID) > 1024 {
			fail(http.StatusBadRequest, "invalid", "Invalid resource id value.")
			return
		}
		if _, exists := cal.events[in.ID]; exists {
			rec.EventID = in.ID
			fail(http.StatusConflict, "duplicate", "The requested identifier already exists.")
			return
		}
		rec.EventID = in.ID
		in.Organizer, in.Creator = nil, nil
		if err := c.complete(&in, cal, now); err != nil {
			fail(http.StatusBadRequest, "invalid", err.Error())
			return
		}
		out = in
	case "update", "patch":
		old, ok := c.lookup(cal, eventID)
		if !ok {
			fail(http.StatusNotFound, "notFound", "Not Found")
			return
		}
		next := in
		if method == "patch" {
			merged, err := mergePatch(old, body)
			if err != nil {
				fail(http.StatusBadRequest, "parseError", err.Error())
				return
			}
			next = merged
		}
		next.ID, next.Created, next.ICalUID = old.ID, old.Created, old.ICalUID
		next.RecurringEventID, next.OriginalStartTime = old.RecurringEventID, old.OriginalStartTime
		next.Organizer, next.Creator = old.Organizer, old.Creator
		if err := c.complete(&next, cal, now); err != nil {
			fail(http.StatusBadRequest, "invalid", err.Error())
			return
		}
		next.Sequence = old.Sequence + 1
		out = next
	case "delete":
		old, ok := c.lookup(cal, eventID)
		if !ok {
			fail(http.StatusNotFound, "notFound", "Not Found")
			return
		}
		if old.Status == "cancelled" {
			fail(http.StatusGone, "deleted", "Resource has been deleted")
			return
		}
		old.Status = "cancelled"
		old.Updated = now.UTC().Format(time.RFC3339Nano)
		old.Sequence++
		out = old
		status = http.StatusNoContent
	}
	c.put(cal, out)
	out = cal.events[out.ID].ev
	rec.Status = status
	c.writes = append(c.writes, rec)
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

// mergePatch applies a PATCH body's top-level fields over old (null
// clears a field).
func mergePatch(old Event, patch []byte) (Event, error) {
	base, err := json.Marshal(old)
	if err != nil {
		return Event{}, err
	}
	var m, p map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil {
		return Event{}, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return Event{}, fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Event{}, err
	}
	var out Event
	return out, json.Unmarshal(b, &out)
}

// syncToken encodes the calendar, the change counter and the generation.
func syncToken(calID string, seq int64, gen int) string {
	return "CAL" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s|%d|%d", calID, seq, gen)))
}

func parseSyncToken(tok string) (calID string, seq int64, gen int, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, "CAL"))
	if err != nil || !strings.HasPrefix(tok, "CAL") {
		return "", 0, 0, false
	}
	parts := strings.Split(string(b), "|")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	seq, err1 := strconv.ParseInt(parts[1], 10, 64)
	gen, err2 := strconv.Atoi(parts[2])
	return parts[0], seq, gen, err1 == nil && err2 == nil
}

// incrementalHorizon bounds the expansion of changed recurring events in
// an incremental sync (Calendar has no window there).
const incrementalHorizon = 366 * 24 * time.Hour

func (s *Server) calList(w http.ResponseWriter, r *http.Request, calID string) {
	q := r.URL.Query()
	single := q.Get("singleEvents") == "true"
	showDeleted := q.Get("showDeleted") == "true"
	tok := q.Get("syncToken")
	if tok != "" {
		for _, p := range []string{"timeMin", "timeMax", "orderBy", "q", "updatedMin", "iCalUID", "privateExtendedProperty", "sharedExtendedProperty"} {
			if q.Get(p) != "" {
				writeGoogleError(w, http.StatusBadRequest, "invalid", "The sync token cannot be used with "+p+".")
				return
			}
		}
	}
	if q.Get("orderBy") == "startTime" && !single {
		writeGoogleError(w, http.StatusBadRequest, "invalid", "The requested ordering is not available for the particular query.")
		return
	}
	var from, to time.Time
	for name, dst := range map[string]*time.Time{"timeMin": &from, "timeMax": &to} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeGoogleError(w, http.StatusBadRequest, "badRequest", "Bad Request: "+name)
				return
			}
			*dst = t
		}
	}
	size := 250
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeGoogleError(w, http.StatusBadRequest, "invalid", "Invalid value for maxResults")
			return
		}
		size = min(n, 2500)
	}

	c := s.cal
	c.mu.Lock()
	defer c.mu.Unlock()
	cal := c.get(calID)
	snapshot := c.seq
	offset := 0
	if v := q.Get("pageToken"); v != "" {
		off, seq, ok := strings.Cut(v, ":")
		n, err1 := strconv.Atoi(strings.TrimPrefix(off, "p"))
		sq, err2 := strconv.ParseInt(seq, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			writeGoogleError(w, http.StatusBadRequest, "invalid", "Invalid page token")
			return
		}
		offset, snapshot = n, sq
	}

	var items []Event
	if tok != "" {
		tcal, since, gen, ok := parseSyncToken(tok)
		if !ok || tcal != cal.id || gen != c.generation {
			writeError(w, http.StatusGone, "", "fullSyncRequired", "Sync token is no longer valid, a full sync is required.")
			return
		}
		horizon := s.now().Add(incrementalHorizon)
		for _, id := range cal.order {
			se := cal.events[id]
			if se.seq <= since {
				continue
			}
			ev := se.ev
			switch {
			case len(ev.Recurrence) > 0 && single:
				for _, inst := range c.expand(cal, ev, horizon, 2000) {
					if ev.Status == "cancelled" || inst.Status == "cancelled" {
						inst = tombstone(inst)
					}
					items = append(items, inst)
				}
			case ev.Status == "cancelled":
				items = append(items, tombstone(ev))
			case ev.RecurringEventID != "" && single:
				items = append(items, ev)
			default:
				items = append(items, ev)
			}
		}
	} else {
		for _, id := range cal.order {
			ev := cal.events[id].ev
			switch {
			case ev.RecurringEventID != "" && single:
				continue // served through its master's expansion
			case len(ev.Recurrence) > 0 && single:
				if ev.Status == "cancelled" && !showDeleted {
					continue
				}
				limitTo := to
				if limitTo.IsZero() {
					limitTo = s.now().Add(incrementalHorizon)
				}
				for _, inst := range c.expand(cal, ev, limitTo, 5000) {
					if inst.Status == "cancelled" && !showDeleted {
						continue
					}
					if c.overlaps(inst, from, to) {
						items = append(items, inst)
					}
				}
			default:
				if ev.Status == "cancelled" && !showDeleted {
					continue
				}
				if len(ev.Recurrence) > 0 || c.overlaps(ev, from, to) {
					items = append(items, ev)
				}
			}
		}
		switch q.Get("orderBy") {
		case "startTime":
			sort.SliceStable(items, func(i, j int) bool {
				a, _, _ := c.parseTime(items[i].Start)
				b, _, _ := c.parseTime(items[j].Start)
				return a.Before(b)
			})
		case "updated":
			sort.SliceStable(items, func(i, j int) bool { return items[i].Updated < items[j].Updated })
		}
	}

	out := wireEvents{Kind: "calendar#events", Etag: fmt.Sprintf(`"%d"`, snapshot), Summary: cal.id,
		Updated: s.now().UTC().Format(time.RFC3339Nano), TimeZone: c.tz, AccessRole: "owner", DefaultReminders: []any{}, Items: []Event{}}
	end := min(offset+size, len(items))
	out.Items = append(out.Items, items[min(offset, len(items)):end]...)
	switch {
	case end < len(items):
		out.NextPageToken = fmt.Sprintf("p%d:%d", end, snapshot)
	case q.Get("orderBy") == "" && q.Get("q") == "" && q.Get("updatedMin") == "":
		out.NextSyncToken = syncToken(cal.id, snapshot, c.generation)
	}
	writeJSON(w, http.StatusOK, out)
}
