package google_test

import (
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/google"
)

// FuzzParseToken: a token file from elsewhere is outside input; it is
// either refused with an error or yields something usable.
func FuzzParseToken(f *testing.F) {
	f.Add(`{"access_token":"a","token_type":"Bearer","refresh_token":"r","expiry":"2024-07-01T13:00:00Z"}`)
	f.Add(`{"token":"a","refresh_token":"r","client_id":"c","client_secret":"s","expiry":"2024-07-01T13:00:00.000000Z"}`)
	f.Add(`{"refresh_token":"r","expires_in":"12"}`)
	f.Add(`{"access_token":"a","expires_in":1e99}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		tf, err := google.ParseToken([]byte(in), time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC))
		if err != nil {
			return
		}
		tok := tf.OAuth2Token()
		if tok.AccessToken == "" && tok.RefreshToken == "" {
			t.Fatalf("accepted a token with neither access nor refresh token: %q", in)
		}
		if tok.TokenType == "" {
			t.Fatalf("no token type: %q", in)
		}
	})
}
