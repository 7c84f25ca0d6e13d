package health

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOverall(t *testing.T) {
	tests := []struct {
		name   string
		states []State
		want   State
	}{
		{"nothing reported", nil, OK},
		{"all ok", []State{OK, OK}, OK},
		{"disabled and starting do not count", []State{OK, Disabled, Starting}, OK},
		{"one degraded", []State{OK, Degraded, Disabled}, Degraded},
		{"down wins over degraded", []State{Degraded, Down, OK}, Down},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cs []Component
			for _, s := range tc.states {
				cs = append(cs, Component{State: s})
			}
			if got := Overall(cs); got != tc.want {
				t.Fatalf("Overall(%v) = %s, want %s", tc.states, got, tc.want)
			}
		})
	}
}

func TestRegistryLifecycle(t *testing.T) {
	now := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	r := NewRegistry(func() time.Time { return now })

	r.Set("gmail", Disabled, "run: omnibrain auth google")
	r.Failure("github", errors.New("502 from api.github.com"))
	r.Restarted("github")
	r.Add("github", "items_stored", 3)
	r.Add("github", "items_stored", 2)
	now = now.Add(time.Minute)
	r.Success("store")

	snap := r.Snapshot()
	var names []string
	for _, c := range snap {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "github,gmail,store" {
		t.Fatalf("snapshot order = %v, want sorted by name", names)
	}
	gh, _ := r.Get("github")
	if gh.State != Down || gh.LastError != "502 from api.github.com" || gh.Restarts != 1 || gh.Counters["items_stored"] != 5 {
		t.Fatalf("github = %+v", gh)
	}
	if st, _ := r.Get("store"); st.State != OK || !st.LastSuccess.Equal(now) {
		t.Fatalf("store = %+v", st)
	}
	if Overall(snap) != Down {
		t.Fatalf("overall = %s with github down", Overall(snap))
	}

	// A success clears the state but keeps the last error for the record.
	r.Success("github")
	if gh, _ = r.Get("github"); gh.State != OK || gh.LastError == "" {
		t.Fatalf("github after success = %+v", gh)
	}
	// Reports are copies: changing one does not change the registry.
	gh.Counters["items_stored"] = 100
	if again, _ := r.Get("github"); again.Counters["items_stored"] != 5 {
		t.Fatal("Get returned the registry's own counters map")
	}
	if _, ok := r.Get("nope"); ok {
		t.Fatal("Get found a component that never reported")
	}
}

func TestRegistryRedactsWhatStatusShows(t *testing.T) {
	const token = "123456:AAE-bot-token"
	r := NewRegistry(nil)
	r.Redact(func(s string) string { return strings.ReplaceAll(s, token, "[redacted]") })
	r.Failure("telegram", errors.New(`Post "https://api.telegram.org/bot`+token+`/getMe": dial tcp: refused`))
	r.Degrade("notify", errors.New("bot"+token+" unreachable"))
	r.Set("router", Down, "configuration: key "+token)
	for _, c := range r.Snapshot() {
		if strings.Contains(c.LastError+c.Detail, token) {
			t.Errorf("%s shows the token: %+v", c.Name, c)
		}
	}
	if c, _ := r.Get("telegram"); !strings.Contains(c.LastError, "bot[redacted]/getMe") {
		t.Errorf("telegram error lost its text: %q", c.LastError)
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry(nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				r.Add("c", "n", 1)
				r.Success("c")
				r.Snapshot()
			}
		}()
	}
	wg.Wait()
	if c, _ := r.Get("c"); c.Counters["n"] != 1600 {
		t.Fatalf("counter = %d, want 1600", c.Counters["n"])
	}
}
