package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/health"
)

// checkGoogle is doctor's view of the Google connection: whether an OAuth
// client and a token are there, what a running daemon last saw (a revoked
// token shows only when Google is asked), what each scope omnibrain asks
// for is used for, and the 7-day expiry of "testing" apps. It reads no
// secret into its output and asks Google nothing itself.
func checkGoogle(ctx context.Context, cfg *config.Config, socket string, now time.Time) []checkResult {
	fix := google.FixCommand + "   (on a machine without a browser: " + google.FixCommand + " --token-file FILE)"
	_, confErr := google.OAuthConfig(cfg.Google)
	path := cfg.Path(google.TokenFileName)
	var out []checkResult
	add := func(status, detail, fix string) {
		out = append(out, checkResult{Name: "google", Status: status, Detail: detail, Fix: fix})
	}

	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.Is(confErr, google.ErrNoClient):
		add("info", "not connected: no Gmail or Calendar",
			"create an OAuth client of type \"Desktop app\" in the Google Cloud console, set OMNIBRAIN_GOOGLE_CREDENTIALS to its JSON (or OMNIBRAIN_GOOGLE_CLIENT_ID and OMNIBRAIN_GOOGLE_CLIENT_SECRET), then run: "+fix)
	case errors.Is(err, fs.ErrNotExist) && confErr != nil:
		add("fail", "the OAuth client cannot be read: "+confErr.Error(), "fix OMNIBRAIN_GOOGLE_CREDENTIALS (the client JSON of a Desktop app)")
	case errors.Is(err, fs.ErrNotExist):
		add("info", "OAuth client set; not authorized yet", fix)
	case err != nil:
		add("fail", "token file: "+err.Error(), fix)
	default:
		out = append(out, checkGoogleToken(b, path, confErr, now.In(cfg.Location), fix)...)
	}
	if c := dialDaemon(ctx, socket); c != nil {
		if st, err := c.Status(ctx); err == nil {
			for _, comp := range st.Components {
				if (comp.Name == "gmail" || comp.Name == "calendar") && comp.State == health.Down {
					add("fail", fmt.Sprintf("the daemon's %s collector is down: %s", comp.Name, comp.LastError), comp.Detail)
				}
			}
		}
	}
	for _, s := range google.Scopes() {
		out = append(out, checkResult{Name: "scope", Status: "info", Detail: s.Name + ": " + s.Why})
	}
	if confErr == nil || len(b) > 0 {
		out = append(out, checkResult{Name: "google", Status: "info", Detail: google.TestingAppNote})
	}
	return out
}

// checkGoogleToken judges a token file without using it; times are shown
// in now's location, the owner's timezone.
func checkGoogleToken(b []byte, path string, confErr error, now time.Time, fix string) []checkResult {
	f, err := google.ParseToken(b, now)
	if err != nil {
		return []checkResult{{Name: "google", Status: "fail", Detail: path + ": " + err.Error(), Fix: fix}}
	}
	expired := !f.Expiry.IsZero() && !now.Before(f.Expiry)
	switch {
	case f.RefreshToken == "" && expired:
		return []checkResult{{Name: "google", Status: "fail", Detail: "the access token expired and there is no refresh token to renew it", Fix: fix}}
	case f.RefreshToken == "":
		return []checkResult{{Name: "google", Status: "warn",
			Detail: "the token has no refresh token: Gmail and Calendar stop when it expires at " + f.Expiry.In(now.Location()).Format("2006-01-02 15:04 MST"), Fix: fix}}
	case confErr != nil && f.ClientID == "":
		return []checkResult{{Name: "google", Status: "fail", Detail: "authorized, but the token cannot be renewed: " + confErr.Error(),
			Fix: "configure the OAuth client the token was issued to (OMNIBRAIN_GOOGLE_CREDENTIALS, or OMNIBRAIN_GOOGLE_CLIENT_ID and OMNIBRAIN_GOOGLE_CLIENT_SECRET)"}}
	}
	return []checkResult{{Name: "google", Status: "ok", Detail: "authorized (" + path + "); the access token is renewed automatically"}}
}
