package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser accepts the 5-field specs of config.Schedule and descriptors
// (@daily, @every 5m).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses a spec in loc. A spec with its own CRON_TZ= keeps it.
//
// Cron specs are made to fire once per matching local wall-clock time on
// DST change days, which robfig/cron alone does not do:
//   - a time that does not exist (spring forward, 02:30 when clocks jump
//     from 02:00 to 03:00) fires at the first instant after the gap (03:00)
//     instead of vanishing for the day;
//   - a time that exists twice (fall back, 01:30) fires at its first
//     occurrence only.
func Parse(spec string, loc *time.Location) (cron.Schedule, error) {
	if loc == nil {
		loc = time.Local
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return s, nil // @every: a fixed interval, no wall clock involved
	}
	if !strings.HasPrefix(strings.TrimSpace(spec), "CRON_TZ=") && !strings.HasPrefix(strings.TrimSpace(spec), "TZ=") {
		ss.Location = loc
	}
	return &wallSchedule{spec: ss}, nil
}

// wallSchedule is a SpecSchedule that fires once per matching wall-clock time.
type wallSchedule struct {
	spec *cron.SpecSchedule
}

// starBit is robfig/cron's marker for a field given as "*".
const starBit = 1 << 63

// maxGapScan bounds the days searched for DST gaps between two firings.
const maxGapScan = 400

func (w *wallSchedule) Next(t time.Time) time.Time {
	for range 4 { // a repeat is skipped at most once per transition
		n := w.spec.Next(t)
		if n.IsZero() {
			return n
		}
		if g := w.gapFiring(t, n); !g.IsZero() {
			return g.In(t.Location())
		}
		if !w.repeated(n) {
			return n
		}
		t = n
	}
	return w.spec.Next(t)
}

// gapFiring returns the earliest instant in (t, n) at which a wall-clock
// time of the schedule that fell into a DST gap should fire, or zero.
func (w *wallSchedule) gapFiring(t, n time.Time) time.Time {
	loc := w.spec.Location
	lt := t.In(loc)
	day := time.Date(lt.Year(), lt.Month(), lt.Day(), 12, 0, 0, 0, loc)
	last := n.In(loc)
	var best time.Time
	for i := 0; i < maxGapScan && !day.After(last.Add(24*time.Hour)); i++ {
		start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
		end := time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc)
		_, offStart := start.Zone()
		_, offEnd := end.Zone()
		if offEnd > offStart && w.dayMatches(day) { // clocks moved forward this day
			for h := 0; h < 24; h++ {
				if w.spec.Hour&(1<<uint(h)) == 0 {
					continue
				}
				for m := 0; m < 60; m++ {
					if w.spec.Minute&(1<<uint(m)) == 0 {
						continue
					}
					x := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, loc)
					if x.Hour() == h && x.Minute() == m {
						continue // exists
					}
					// Go normalises a missing time to one side of the gap
					// or the other: the jump is the zone bound inside the day.
					fire, zoneEnd := x.ZoneBounds()
					if !zoneEnd.IsZero() && !zoneEnd.Before(start) && zoneEnd.Before(end) {
						fire = zoneEnd
					}
					if fire.After(t) && fire.Before(n) && (best.IsZero() || fire.Before(best)) {
						best = fire
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return best
}

// repeated reports whether n's wall-clock time already happened earlier
// the same night (the second pass through a fall-back hour).
func (w *wallSchedule) repeated(n time.Time) bool {
	loc := w.spec.Location
	ln := n.In(loc)
	zoneStart, _ := ln.ZoneBounds()
	if zoneStart.IsZero() || ln.Sub(zoneStart) >= 24*time.Hour {
		return false
	}
	_, offNow := ln.Zone()
	_, offBefore := zoneStart.Add(-time.Nanosecond).In(loc).Zone()
	if offBefore <= offNow {
		return false // not a fall-back transition
	}
	earlier := ln.Add(-time.Duration(offBefore-offNow) * time.Second).In(loc)
	return earlier.Before(zoneStart) && sameWall(earlier, ln)
}

func sameWall(a, b time.Time) bool {
	return a.Year() == b.Year() && a.YearDay() == b.YearDay() && a.Hour() == b.Hour() && a.Minute() == b.Minute() && a.Second() == b.Second()
}

func (w *wallSchedule) dayMatches(t time.Time) bool {
	s := w.spec
	if 1<<uint(t.Month())&s.Month == 0 {
		return false
	}
	dom := 1<<uint(t.Day())&s.Dom > 0
	dow := 1<<uint(t.Weekday())&s.Dow > 0
	if s.Dom&starBit > 0 || s.Dow&starBit > 0 {
		return dom && dow
	}
	return dom || dow
}
