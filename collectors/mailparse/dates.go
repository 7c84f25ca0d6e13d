package mailparse

import (
	"net/mail"
	"regexp"
	"strings"
	"time"
)

// zoneOffsets are the zone abbreviations old mailers write instead of a
// numeric offset.
var zoneOffsets = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "BST": 1, "IST": 1, "CET": 1, "MET": 1,
	"MEZ": 1, "CEST": 2, "MEST": 2, "MESZ": 2, "EET": 2, "EEST": 3, "MSK": 3,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6,
	"PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10,
	"JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}

// dateLayouts are tried in order after net/mail's parser; numeric zones
// come first, then named ones (resolved by zoneOffsets), then none (UTC).
var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04 -0700",
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04 -0700",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"2 Jan 06 15:04:05 -0700",
	"Mon, 2 January 2006 15:04:05 -0700",
	"Monday, 2 January 2006 15:04:05 -0700",
	"Mon, Jan 2 2006 15:04:05 -0700",
	"Mon Jan 2 15:04:05 -0700 2006",
	"Mon Jan 2 15:04:05 2006 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04 MST",
	"2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 06 15:04:05 MST",
	"Mon Jan 2 15:04:05 MST 2006",
	"Mon, 2 Jan 2006 15:04:05",
	"2 Jan 2006 15:04:05",
	"Mon, 2 Jan 06 15:04:05",
	"Mon Jan 2 15:04:05 2006",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05Z07:00",
	"01/02/2006 15:04:05",
	"01/02/2006 3:04:05 PM",
	"01/02/2006 3:04 PM",
	"2 Jan 06 3:04:05 PM",
	"2 Jan 2006 3:04:05 PM",
	"Mon, 2 Jan 2006 3:04:05 PM -0700",
	"Monday, January 2, 2006 3:04 PM",
	"Monday, January 2, 2006 3:04:05 PM",
}

var (
	dateComment   = regexp.MustCompile(`\([^)]*\)`)
	dateSpaces    = regexp.MustCompile(`\s+`)
	dateBadOffset = regexp.MustCompile(`([+-])(\d{1,2}):?(\d{2})$`)
	dateGMTOffset = regexp.MustCompile(`(?i)\b(?:GMT|UTC)([+-]\d{1,4})$`)
	dateClock     = regexp.MustCompile(`\b(\d{1,2}):(\d{1,2})(?::(\d{1,2}))?\b`)
	dateDoubleSig = regexp.MustCompile(`[+-]([+-]\d{4})$`)
	dateNoSign    = regexp.MustCompile(`(\d{4} \d{1,2}:\d{2}(?::\d{2})?) (\d{4})$`)
	dateLongZone  = regexp.MustCompile(`(?i) ([a-z.]+ )*(standard|daylight) time$`)
)

// longZones are Windows' spelled-out zone names.
var longZones = map[string]string{
	"greenwich standard time": "+0000", "gmt standard time": "+0000", "eastern standard time": "-0500",
	"eastern daylight time": "-0400", "central standard time": "-0600", "central daylight time": "-0500",
	"mountain standard time": "-0700", "mountain daylight time": "-0600", "pacific standard time": "-0800",
	"pacific daylight time": "-0700", "w. europe standard time": "+0100", "romance standard time": "+0100",
}

// parseDate reads a date header as leniently as real mail needs: comments,
// named zones, two-digit years, missing seconds, "GMT+0100", odd commas.
func parseDate(raw string) (time.Time, bool) {
	s := strings.TrimSpace(dateComment.ReplaceAllString(unfold(raw), " "))
	s = dateSpaces.ReplaceAllString(s, " ")
	s = strings.TrimRight(s, " .,;")
	if s == "" {
		return time.Time{}, false
	}
	if t, err := mail.ParseDate(s); err == nil {
		return fixDate(t), true
	}
	s = normalizeDate(s)
	if t, err := mail.ParseDate(s); err == nil {
		return fixDate(t), true
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return fixDate(t), true
		}
	}
	return time.Time{}, false
}

// fixDate gives a named zone its offset (time.Parse invents a zero offset
// for abbreviations it does not know) and repairs the year.
func fixDate(t time.Time) time.Time {
	if name, off := t.Zone(); off == 0 && name != "" {
		if o, ok := zoneOffsets[strings.ToUpper(name)]; ok && o != 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.FixedZone(strings.ToUpper(name), o*3600))
		}
	}
	return fixYear(t)
}

// normalizeDate repairs what broken mailers write: commas without a space,
// "GMT+0100", one-digit clock fields, "+-0500", a zone without its sign,
// Windows' long zone names.
func normalizeDate(s string) string {
	s = strings.ReplaceAll(s, ",", ", ")
	s = dateSpaces.ReplaceAllString(s, " ")
	s = strings.ReplaceAll(s, " , ", ", ")
	if m := dateLongZone.FindString(s); m != "" {
		off, ok := longZones[strings.ToLower(strings.TrimSpace(m))]
		if !ok {
			off = "+0000"
		}
		s = s[:len(s)-len(m)] + " " + off
	}
	if m := dateGMTOffset.FindStringSubmatch(s); m != nil {
		off := m[1]
		if len(off) <= 3 { // GMT+1 or GMT+01
			off = off[:1] + strings.Repeat("0", 3-len(off)) + off[1:] + "00"
		}
		s = s[:len(s)-len(m[0])] + off
	}
	if m := dateDoubleSig.FindStringSubmatch(s); m != nil {
		s = s[:len(s)-len(m[0])] + m[1]
	}
	if m := dateBadOffset.FindStringSubmatch(s); m != nil && len(m[2]) < 2 {
		s = s[:len(s)-len(m[0])] + m[1] + "0" + m[2] + m[3]
	}
	s = dateNoSign.ReplaceAllString(s, "$1 +$2")
	return dateClock.ReplaceAllStringFunc(s, func(c string) string {
		parts := strings.Split(c, ":")
		for i, p := range parts {
			if len(p) == 1 {
				parts[i] = "0" + p
			}
		}
		return strings.Join(parts, ":")
	})
}

// fixYear repairs two-digit years and the Y2K bug's "0102" (1900+102).
func fixYear(t time.Time) time.Time {
	y := t.Year()
	switch {
	case y < 70:
		y += 2000
	case y < 100:
		y += 1900
	case y < 200:
		y += 1900
	default:
		return t
	}
	return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}

// plausible reports whether a parsed date can be a mail's date.
func plausible(t time.Time) bool {
	return t.Year() >= 1971 && t.Year() <= 2100
}

// receivedDate returns the date of a Received header (after its last ';').
func receivedDate(raw string) (time.Time, bool) {
	i := strings.LastIndex(raw, ";")
	if i < 0 {
		return time.Time{}, false
	}
	t, ok := parseDate(raw[i+1:])
	return t, ok && plausible(t)
}

// mboxFromDate reads the date of an mbox "From sender date" line.
func mboxFromDate(line string) (time.Time, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "From" {
		return time.Time{}, false
	}
	t, ok := parseDate(strings.Join(f[2:], " "))
	return t, ok && plausible(t)
}
