package router

import (
	"strings"
	"testing"
)

// A local provider's client refuses to connect off loopback whatever URL
// it is handed (a redirect, a DNS answer), before any packet is sent.
func TestLocalClientOnlyDialsLoopback(t *testing.T) {
	c := httpClient(true)
	defer c.CloseIdleConnections()
	_, err := c.Get("http://192.0.2.1:9/v1/models") // TEST-NET-1: never routed
	if err == nil || !strings.Contains(err.Error(), "may only connect to loopback") {
		t.Fatalf("got %v", err)
	}
}

func TestIsLoopbackURL(t *testing.T) {
	for url, want := range map[string]bool{
		"http://127.0.0.1:11434/v1":  true,
		"http://127.1.2.3/v1":        true,
		"http://[::1]:8080/v1":       true,
		"http://localhost:1234/v1":   true,
		"https://api.openai.com/v1":  false,
		"http://10.0.0.5:11434/v1":   false,
		"http://localhost.evil.com/": false,
		"http://0.0.0.0:11434/v1":    false,
		"::not a url":                false,
	} {
		if got := IsLoopbackURL(url); got != want {
			t.Errorf("IsLoopbackURL(%q) = %v, want %v", url, got, want)
		}
	}
}
