package schedule

import (
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

// firings lists the schedule's firings in [from, to).
func firings(t *testing.T, spec string, loc *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	s, err := Parse(spec, loc)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for n := s.Next(from.Add(-time.Nanosecond)); !n.IsZero() && n.Before(to); n = s.Next(n) {
		out = append(out, n)
		if len(out) > 10000 {
			t.Fatal("runaway schedule")
		}
	}
	return out
}

func TestScheduleNextOnFixedTimes(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	berlin := mustLoad(t, "Europe/Berlin")
	at := func(loc *time.Location, y int, mo time.Month, d, h, m int) time.Time {
		return time.Date(y, mo, d, h, m, 0, 0, loc)
	}
	tests := []struct {
		name string
		spec string
		loc  *time.Location
		from time.Time
		want time.Time // in UTC, so an hour's error cannot hide in the zone
	}{
		{"morning before 07:00", "0 7 * * *", chicago, at(chicago, 2001, 10, 25, 6, 59), time.Date(2001, 10, 25, 12, 0, 0, 0, time.UTC)},
		{"morning after 07:00 is tomorrow", "0 7 * * *", chicago, at(chicago, 2001, 10, 25, 7, 0), time.Date(2001, 10, 26, 12, 0, 0, 0, time.UTC)},
		{"morning after fall back is 07:00 CST", "0 7 * * *", chicago, at(chicago, 2001, 10, 28, 0, 0), time.Date(2001, 10, 28, 13, 0, 0, 0, time.UTC)},
		{"morning after spring forward is 07:00 CDT", "0 7 * * *", chicago, at(chicago, 2024, 3, 10, 0, 0), time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)},
		{"evening 22:00", "0 22 * * *", chicago, at(chicago, 2001, 10, 28, 12, 0), time.Date(2001, 10, 29, 4, 0, 0, 0, time.UTC)},
		{"weekly Monday 08:00 from Thursday", "0 8 * * 1", chicago, at(chicago, 2001, 10, 25, 9, 0), time.Date(2001, 10, 29, 14, 0, 0, 0, time.UTC)},
		{"weekly Monday 08:00 in Berlin", "0 8 * * 1", berlin, at(berlin, 2024, 3, 28, 9, 0), time.Date(2024, 4, 1, 6, 0, 0, 0, time.UTC)},
		{"02:30 in the spring gap fires when clocks jump (03:00 CDT)", "30 2 * * *", chicago, at(chicago, 2024, 3, 10, 0, 0), time.Date(2024, 3, 10, 8, 0, 0, 0, time.UTC)},
		{"02:30 the day after the gap is normal", "30 2 * * *", chicago, at(chicago, 2024, 3, 10, 4, 0), time.Date(2024, 3, 11, 7, 30, 0, 0, time.UTC)},
		{"02:30 Berlin gap fires at 03:00 CEST", "30 2 * * *", berlin, at(berlin, 2024, 3, 31, 0, 0), time.Date(2024, 3, 31, 1, 0, 0, 0, time.UTC)},
		{"01:30 on fall back fires at its first occurrence", "30 1 * * *", chicago, at(chicago, 2001, 10, 28, 0, 0), time.Date(2001, 10, 28, 6, 30, 0, 0, time.UTC)},
		{"01:30 on fall back does not fire twice", "30 1 * * *", chicago, time.Date(2001, 10, 28, 6, 30, 0, 0, time.UTC), time.Date(2001, 10, 29, 7, 30, 0, 0, time.UTC)},
		{"every 5 minutes ignores the zone", "@every 5m", chicago, time.Date(2001, 10, 28, 6, 58, 0, 0, time.UTC), time.Date(2001, 10, 28, 7, 3, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec, tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(tt.from)
			if !got.Equal(tt.want) {
				t.Errorf("Next(%s) = %s (%s), want %s", tt.from, got.UTC(), got.In(tt.loc), tt.want)
			}
		})
	}
}

func TestScheduleCountsOnDSTDays(t *testing.T) {
	chicago := mustLoad(t, "America/Chicago")
	day := func(y int, mo time.Month, d int) (time.Time, time.Time) {
		return time.Date(y, mo, d, 0, 0, 0, 0, chicago), time.Date(y, mo, d+1, 0, 0, 0, 0, chicago)
	}
	tests := []struct {
		name string
		spec string
		y    int
		mo   time.Month
		d    int
		want int
	}{
		{"hourly on a normal day", "0 * * * *", 2001, 10, 27, 24},
		{"hourly on the fall-back day: once per wall-clock hour", "0 * * * *", 2001, 10, 28, 24},
		{"hourly on the spring-forward day: 02:00 does not exist", "0 * * * *", 2024, 3, 10, 23},
		{"daily 02:30 still fires on the spring-forward day", "30 2 * * *", 2024, 3, 10, 1},
		{"daily 01:30 fires once on the fall-back day", "30 1 * * *", 2001, 10, 28, 1},
		{"every 5 minutes on the fall-back day (25 hours)", "@every 5m", 2001, 10, 28, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := day(tt.y, tt.mo, tt.d)
			got := firings(t, tt.spec, chicago, from, to)
			if len(got) != tt.want {
				t.Errorf("%d firings, want %d: %v", len(got), tt.want, got)
			}
			seen := map[string]bool{}
			for _, f := range got {
				w := f.In(chicago).Format("15:04")
				if tt.spec != "@every 5m" && seen[w] {
					t.Errorf("wall-clock time %s fired twice", w)
				}
				seen[w] = true
			}
		})
	}
}

func TestParseRejectsBadSpecs(t *testing.T) {
	for _, spec := range []string{"", "7 * *", "61 * * * *", "0 25 * * *", "@sometimes"} {
		if _, err := Parse(spec, time.UTC); err == nil {
			t.Errorf("Parse(%q) accepted a bad spec", spec)
		}
	}
}
