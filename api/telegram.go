package api

import (
	"context"
	"net/http"
	"time"
)

// TelegramPairer makes one-time pairing codes for the Telegram bot.
type TelegramPairer interface {
	Pair(ctx context.Context) (*PairResponse, error)
}

// PairResponse is POST /api/v1/telegram/pair: the code to send as
// "/start CODE" to the bot, valid until Expires.
type PairResponse struct {
	Code    string    `json:"code"`
	Expires time.Time `json:"expires"`
	// Note says what else is needed (no bot token configured yet, say).
	Note string `json:"note,omitempty"`
}

func (s *Server) handleTelegramPair(w http.ResponseWriter, r *http.Request) {
	if s.b.Telegram == nil {
		notConfigured(w, "telegram pairing")
		return
	}
	res, err := s.b.Telegram.Pair(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// TelegramPair asks for a pairing code.
func (c *Client) TelegramPair(ctx context.Context) (*PairResponse, error) {
	var out PairResponse
	return &out, c.do(ctx, http.MethodPost, "/api/v1/telegram/pair", struct{}{}, &out)
}
