package main

import (
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/health"
)

func TestComponentSummary(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		c    health.Component
		want string
	}{
		{health.Component{State: health.Disabled, Detail: "run: omnibrain auth github"}, "run: omnibrain auth github"},
		{health.Component{State: health.OK, LastSuccess: now.Add(-3 * time.Second)}, "last ok 3s ago"},
		{health.Component{State: health.OK, Detail: "12 vectors", LastSuccess: now.Add(-time.Minute)}, "12 vectors (last ok 1m0s ago)"},
		// An ok component's old error is history, not news.
		{health.Component{State: health.OK, Detail: "12 tools", LastError: "old"}, "12 tools"},
		// No detail: the error stands alone, without a dangling separator.
		{health.Component{State: health.Degraded, LastError: "getMe: connection refused"}, "last error: getMe: connection refused"},
		{health.Component{State: health.Down, Detail: "polls every 10m", LastError: "401", Restarts: 2}, "polls every 10m (last error: 401; restarted 2 times)"},
		{health.Component{State: health.Starting}, ""},
	}
	for _, tc := range tests {
		if got := componentSummary(tc.c, now); got != tc.want {
			t.Errorf("componentSummary(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
