package retry

import (
	"net/http"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

func TestAfter(t *testing.T) {
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"   ", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0.5", 500 * time.Millisecond, true},
		{"-3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1e309", 0, false},
		{"9999999999999", MaxAfter, true},
		{"soon", 0, false},
		// HTTP dates in the three formats RFC 9110 allows.
		{"Thu, 26 Nov 2026 09:00:30 GMT", 30 * time.Second, true},
		{"Thursday, 26-Nov-26 09:01:00 GMT", time.Minute, true},
		{"Thu Nov 26 09:00:05 2026", 5 * time.Second, true},
		{"Thu, 26 Nov 2026 08:00:00 GMT", 0, true}, // in the past: at once
		{"Fri, 27 Nov 2026 10:00:00 GMT", MaxAfter, true},
		{"Thu, 26 Nov 2026 25:00:00 GMT", 0, false},
	}
	for _, tt := range tests {
		got, ok := After(tt.v, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("After(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFromHeader(t *testing.T) {
	tests := []struct {
		name      string
		ms, after string
		want      time.Duration
		ok        bool
	}{
		{"none", "", "", 0, false},
		{"seconds", "", "2", 2 * time.Second, true},
		{"milliseconds win", "250", "2", 250 * time.Millisecond, true},
		{"zero milliseconds fall back", "0", "3", 3 * time.Second, true},
		{"bad milliseconds fall back", "x", "3", 3 * time.Second, true},
		{"milliseconds alone", "1500", "", 1500 * time.Millisecond, true},
		{"a date", "", "Thu, 26 Nov 2026 09:00:10 GMT", 10 * time.Second, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.ms != "" {
			h.Set("Retry-After-Ms", tt.ms)
		}
		if tt.after != "" {
			h.Set("Retry-After", tt.after)
		}
		got, ok := FromHeader(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: FromHeader = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// Whatever a server sends, the wait is between 0 and MaxAfter.
func FuzzFromHeader(f *testing.F) {
	for _, s := range []string{"2", "0.5", "-3", "", "Wed, 21 Oct 2015 07:28:00 GMT", "1e309", "NaN", "Inf", "-Inf", "9999999999999", "0x1p40"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, after, ms string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", ms)
		if d, ok := FromHeader(h, now); d < 0 || d > MaxAfter || (!ok && d != 0) {
			t.Fatalf("FromHeader(%q, %q) = %v, %v", after, ms, d, ok)
		}
	})
}

func TestPolicyWait(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want []time.Duration // for n = 1, 2, …
	}{
		{"doubling to a cap", Policy{Initial: time.Second, Max: 5 * time.Second},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"a multiplier", Policy{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 3},
			[]time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, time.Second}},
		{"an initial above the cap is capped", Policy{Initial: 2 * time.Hour, Max: time.Hour},
			[]time.Duration{time.Hour, time.Hour}},
		{"no cap", Policy{Initial: time.Minute},
			[]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}},
		{"jitter is ignored", Policy{Initial: time.Second, Max: time.Minute, Jitter: 0.5},
			[]time.Duration{time.Second, 2 * time.Second}},
	}
	for _, tt := range tests {
		for i, want := range tt.want {
			if got := tt.p.Wait(i + 1); got != want {
				t.Errorf("%s: Wait(%d) = %v, want %v", tt.name, i+1, got, want)
			}
		}
	}
	p := Policy{Initial: time.Second, Max: time.Hour}
	if p.Wait(0) != time.Second || p.Wait(-4) != time.Second {
		t.Errorf("Wait below 1 = %v, %v; want the first wait", p.Wait(0), p.Wait(-4))
	}
	if got := p.Wait(1 << 20); got != time.Hour {
		t.Errorf("Wait after a million failures = %v, want the cap", got)
	}
}

// Backoff steps through the same waits as Wait, and Reset starts over.
func TestPolicyBackoff(t *testing.T) {
	p := Policy{Initial: time.Second, Max: 4 * time.Second}
	b := p.Backoff()
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if got := b.NextBackOff(); got != want || got != p.Wait(i+1) {
			t.Errorf("step %d: %v, want %v", i+1, got, want)
		}
	}
	b.Reset()
	if got := b.NextBackOff(); got != time.Second {
		t.Errorf("after Reset: %v, want 1s", got)
	}
}

// Jitter keeps every wait within ±Jitter of the exact one.
func TestPolicyJitterBounds(t *testing.T) {
	p := Policy{Initial: time.Second, Max: 8 * time.Second, Jitter: 0.5}
	varied := false
	for range 200 {
		b := p.Backoff()
		for n := 1; n <= 5; n++ {
			exact := p.Wait(n)
			got := b.NextBackOff()
			lo, hi := exact/2, exact+exact/2+1
			if got < lo || got > hi {
				t.Fatalf("wait %d = %v, outside [%v, %v]", n, got, lo, hi)
			}
			varied = varied || got != exact
		}
	}
	if !varied {
		t.Error("200 jittered sequences were all exact")
	}
}
