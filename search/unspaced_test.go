package search

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/importer"
	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/testutil"
)

// Words inside runs of Japanese and Chinese text (the iso-2022-jp and
// gb2312 mails of the SpamAssassin corpus, among English ones) are found
// by substring, one or two letters long or longer, in every mode that
// reads keywords, with the word marked in the snippet.
func TestUnspacedScriptsOnSpamAssassin(t *testing.T) {
	data := testutil.SharedData(t, "mail/spamassassin/data")
	files := map[string]string{
		"hard-ham-1/00039.b2b936a8501444b213f61f9ff193b480.txt": "iso-2022-jp: a task list with milestones",
		"hard-ham-1/00042.5b7f2a0e87c853e8c8e13d556c1320d2.txt": "iso-2022-jp: Mitsubishi Chemical Engineering process down",
		"spam-1/00397.1a99f98a5b996f99f3661e9609782932.txt":     "gb2312: email marketing",
		"spam-2/00876.f61ec69c2872eb398ba3860a13a17b15.txt":     "gb2312: text message cards",
	}
	dir := t.TempDir()
	for f := range files {
		b, err := os.ReadFile(filepath.Join(data, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// English mail beside them.
	ham, err := os.ReadDir(filepath.Join(data, "easy-ham-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ham[:200] {
		b, err := os.ReadFile(filepath.Join(data, "easy-ham-1", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	st := openTest(t)
	if _, err := importer.New(importer.Options{Store: st}).Import(ctx, "maildir", dir, nil); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	s := New(st, vec, nil)

	for _, tc := range []struct {
		query string
		want  []string // words of the subjects of the mails that hold it
	}{
		{"マイルストーン", []string{"日本語の件名"}},             // milestone, inside 適当なマイルストーンを複数
		{"三菱化学", []string{"三菱化学エンジニアリング様"}},         // inside 三菱化学エンジニアリング様のlivelinkログ
		{"伊東", []string{"日本語の件名", "三菱化学エンジニアリング様"}}, // two letters: Mr. Ito, in both
		{"网站推广", []string{"50元获得一亿五千万EMAIL地址的机会"}},  // website promotion, inside 进行企业网站推广或者
		{"短信", []string{"A类短信包月卡"}},                 // two letters, text message
		{"livelink ログ", []string{"三菱化学エンジニアリング様"}},  // mixed with a spaced word
	} {
		for _, mode := range []string{ModeFTS, ModeHybrid} {
			hits, err := s.Search(ctx, Query{Text: tc.query, Mode: mode, Limit: 5, Now: time.Now()})
			if err != nil {
				t.Fatalf("%s %q: %v", mode, tc.query, err)
			}
			if len(hits) < len(tc.want) {
				t.Errorf("%s %q: %d hits, want %d", mode, tc.query, len(hits), len(tc.want))
				continue
			}
			for i, w := range tc.want {
				h := hits[i]
				if !strings.Contains(h.Item.Title+h.Item.Body, w) || h.ByMeaning {
					t.Errorf("%s %q: hit %d is %q (by meaning %v), want the mail with %q", mode, tc.query, i+1, h.Item.Title, h.ByMeaning, w)
				}
				word := strings.Fields(tc.query)[len(strings.Fields(tc.query))-1]
				if !strings.Contains(h.Snippet, "«") || !strings.Contains(h.Snippet, word) {
					t.Errorf("%s %q: snippet %q does not mark the word", mode, tc.query, h.Snippet)
				}
			}
		}
	}
}
