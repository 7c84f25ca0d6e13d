package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/internal/fakes/omi"
)

// The daemon's side of one chat-tools read call (argument filtering,
// request, answer parsing) against a loopback app that answers at once,
// beside a bare POST of the same body with the same client: the
// difference is omnibrain's overhead.
func BenchmarkChatToolsCall(b *testing.B) {
	app := omi.New(b)
	app.SetManifest(omi.Manifest{Tools: []omi.Tool{{Name: "search", Description: "Search.", Endpoint: "/s", Parameters: omi.StringParams("query")}}})
	app.Handle("/s", func(omi.Call) omi.Answer { return omi.Answer{Body: map[string]string{"result": "3 messages found"}} })
	root := b.TempDir()
	c, err := Prepare(context.Background(), AddOptions{Root: root, Source: app.ManifestURL(), Name: "s", Read: []string{"search"}})
	if err != nil {
		b.Fatal(err)
	}
	c.Save(root)
	m, _ := Load(root, Options{})
	call := m.readCall("s", "search")
	args := json.RawMessage(`{"query":"budget meeting notes"}`)
	ctx := context.Background()
	b.Run("bare-http", func(b *testing.B) {
		client := NewHTTPClient()
		body := []byte(`{"uid":"0123456789abcdef0123456789abcdef","app_id":"s","tool_name":"search","query":"budget meeting notes"}`)
		for b.Loop() {
			resp, err := client.Post(app.URL+"/s", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var v map[string]any
			json.NewDecoder(resp.Body).Decode(&v)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("plugin-read-call", func(b *testing.B) {
		for b.Loop() {
			if _, err := call(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The leak check a read call makes when the run holds outside text: here
// about 20 KB of mail.
func BenchmarkLeakCheck(b *testing.B) {
	mail := strings.Repeat("Hi team, the quarterly numbers for the Rotterdam project are attached; call Dana at +31 10 555 0199 or dana@partner.example. ", 160)
	prov := agent.Provenance{Request: "search slack for the rotterdam project budget", Untrusted: []string{mail}}
	ps := map[string]json.RawMessage{"query": json.RawMessage(`"rotterdam project budget and the latest numbers"`)}
	for b.Loop() {
		if got := leaks(prov, ps); got != nil {
			b.Fatal(got)
		}
	}
}

// A local plugin call through the sandbox helper (a process that limits
// and confines itself, then execs the program) beside running the
// program directly.
func BenchmarkLocalCall(b *testing.B) {
	e := env{home: b.TempDir()}
	e.root = filepath.Join(e.home, "plugins")
	src := filepath.Join(b.TempDir(), "echo")
	os.MkdirAll(src, 0o700)
	prog := "#!/bin/sh\ncat >/dev/null\necho '{\"output\":\"ok\"}'\n"
	os.WriteFile(filepath.Join(src, "run.sh"), []byte(prog), 0o700)
	os.WriteFile(filepath.Join(src, ManifestName), []byte("name: echo\ncommand: run.sh\nsha256: "+sum([]byte(prog))+
		"\ntools:\n  - name: say\n    description: says ok\n    read_only: true\n"), 0o600)
	c, err := Prepare(context.Background(), AddOptions{Root: e.root, Home: e.home, Source: src, Landlock: true, Trust: true})
	if err != nil {
		b.Fatal(err)
	}
	c.Save(e.root)
	m, _ := Load(e.root, Options{})
	call := m.readCall("echo", "say")
	b.Run("direct-exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(filepath.Join(src, "run.sh"))
			cmd.Stdin = strings.NewReader(`{"tool":"say","arguments":{}}`)
			if out, err := cmd.Output(); err != nil || !bytes.Contains(out, []byte("ok")) {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandboxed-call", func(b *testing.B) {
		for b.Loop() {
			if _, err := call(context.Background(), json.RawMessage(`{}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// `plugin add` of a 50-tool manifest: fetch, parse and check every tool,
// pin and save.
func BenchmarkAdd50Tools(b *testing.B) {
	app := omi.New(b)
	var m omi.Manifest
	for i := range 50 {
		m.Tools = append(m.Tools, omi.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: fmt.Sprintf("Tool number %d: looks things up in the app.", i),
			Endpoint: fmt.Sprintf("/api/tool/%d", i), Parameters: omi.StringParams("query", "channel", "limit"), StatusMessage: "Working..."})
	}
	app.SetManifest(m)
	home := b.TempDir()
	i := 0
	for b.Loop() {
		root := filepath.Join(home, fmt.Sprint(i))
		i++
		c, err := Prepare(context.Background(), AddOptions{Root: root, Source: app.ManifestURL(), Name: "big", Read: []string{"tool_00"}})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Save(root); err != nil {
			b.Fatal(err)
		}
	}
	_ = http.StatusOK
}
