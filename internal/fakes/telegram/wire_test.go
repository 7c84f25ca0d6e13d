package telegram

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"
	"time"
)

// post sends a multipart request as go-telegram/bot does and decodes the answer.
func post(t *testing.T, s *Server, method string, params map[string]string) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range params {
		w.WriteField(k, v)
	}
	w.Close()
	resp, err := http.Post(s.URL()+"/bot"+s.Token+"/"+method, w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func TestGetUpdatesOffsetAndTimeout(t *testing.T) {
	s := New("42:abc")
	defer s.Close()
	u := User{ID: 7, FirstName: "o"}
	a := s.SendText(u, "one")
	b := s.SendText(u, "two")
	_, out := post(t, s, "getUpdates", map[string]string{"offset": "0", "timeout": "0"})
	if got := len(out["result"].([]any)); got != 2 {
		t.Fatalf("%d updates", got)
	}
	// Not confirmed yet: delivered again.
	_, out = post(t, s, "getUpdates", map[string]string{"timeout": "0"})
	if got := len(out["result"].([]any)); got != 2 {
		t.Fatalf("%d updates before confirmation", got)
	}
	// Confirming a drops it.
	_, out = post(t, s, "getUpdates", map[string]string{"offset": itoa(a + 1), "timeout": "0"})
	res := out["result"].([]any)
	if len(res) != 1 || int64(res[0].(map[string]any)["update_id"].(float64)) != b {
		t.Fatalf("after confirming %d: %v", a, res)
	}
	// Long poll: waits for the next update.
	polls := s.CallCount("getUpdates")
	go func() { // once the long poll has arrived
		s.WaitUntil(5*time.Second, func() bool { return s.CallCount("getUpdates") > polls })
		s.SendText(u, "three")
	}()
	start := time.Now()
	_, out = post(t, s, "getUpdates", map[string]string{"offset": itoa(b + 1), "timeout": "5"})
	if len(out["result"].([]any)) != 1 || time.Since(start) > 4*time.Second {
		t.Fatalf("long poll: %v after %v", out, time.Since(start))
	}
	// Timeout with nothing new: an empty list after the timeout.
	start = time.Now()
	_, out = post(t, s, "getUpdates", map[string]string{"offset": itoa(b + 2), "timeout": "1"})
	if len(out["result"].([]any)) != 0 || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("timeout: %v after %v", out, time.Since(start))
	}
	// A press carries an accessible message (non-zero date).
	_, q := s.Press(u, 7, 1, "x")
	_, out = post(t, s, "getUpdates", map[string]string{"offset": itoa(b + 2)})
	cq := out["result"].([]any)[0].(map[string]any)["callback_query"].(map[string]any)
	if cq["id"] != q || cq["message"].(map[string]any)["date"].(float64) == 0 {
		t.Errorf("callback query %v", cq)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestErrorsAreBotAPIShaped(t *testing.T) {
	s := New("42:abc")
	defer s.Close()
	s.OpenChat(7)
	s.Fail("sendMessage", Failure{Code: 429, Description: "Too Many Requests: retry after 3", RetryAfter: 3}, 1)
	code, out := post(t, s, "sendMessage", map[string]string{"chat_id": "7", "text": "x"})
	if code != 429 || out["ok"] != false || out["error_code"].(float64) != 429 || out["parameters"].(map[string]any)["retry_after"].(float64) != 3 {
		t.Errorf("429: %d %v", code, out)
	}
	cases := []struct {
		method string
		params map[string]string
		want   string
	}{
		{"sendMessage", map[string]string{"chat_id": "8", "text": "x"}, "chat not found"},
		{"sendMessage", map[string]string{"chat_id": "7", "text": "<b>x", "parse_mode": "HTML"}, "can't parse entities"},
		{"sendMessage", map[string]string{"chat_id": "7", "text": string(bytes.Repeat([]byte("x"), 4097))}, "message is too long"},
		{"sendMessage", map[string]string{"chat_id": "7"}, "required"},
		{"sendMessage", map[string]string{"chat_id": "7", "text": "x", "reply_markup": "{"}, "reply keyboard"},
		{"sendMessage", map[string]string{"chat_id": "7", "text": "x", "colour": "red"}, "unexpected parameter"},
		{"answerCallbackQuery", map[string]string{"callback_query_id": "nope"}, "query ID is invalid"},
		{"editMessageText", map[string]string{"chat_id": "7", "message_id": "999", "text": "x"}, "message to edit not found"},
		{"sendSticker", map[string]string{}, "method not found"},
	}
	for _, c := range cases {
		_, out := post(t, s, c.method, c.params)
		if out["ok"] != false || !bytes.Contains([]byte(out["description"].(string)), []byte(c.want)) {
			t.Errorf("%s %v: %v, want %q", c.method, c.params, out, c.want)
		}
	}
	_, out = post(t, s, "sendMessage", map[string]string{"chat_id": "7", "text": "hi", "reply_markup": `{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}`})
	id := itoa(int64(out["result"].(map[string]any)["message_id"].(float64)))
	_, out = post(t, s, "editMessageText", map[string]string{"chat_id": "7", "message_id": id, "text": "hi", "reply_markup": `{"inline_keyboard":[[{"text":"A","callback_data":"a"}]]}`})
	if !bytes.Contains([]byte(out["description"].(string)), []byte("not modified")) {
		t.Errorf("identical edit: %v", out)
	}
	post(t, s, "editMessageText", map[string]string{"chat_id": "7", "message_id": id, "text": "done"})
	if m, _ := s.Message(7, int(out2int(id))); m.Keyboard != nil || m.Text != "done" {
		t.Errorf("after edit without markup: %+v", m)
	}
	resp, _ := http.Post(s.URL()+"/botWRONG/getMe", "", nil)
	if resp.StatusCode != 401 {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
}

func out2int(s string) int64 { var n int64; json.Unmarshal([]byte(s), &n); return n }
