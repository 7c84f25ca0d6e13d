package importer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// parseJSONL accepts what encoding/json's Unmarshal accepts as a line, and
// decodes it to the same document. (Decoder.More alone took "null}" and a
// mail with one closing brace too many as one value.)
func FuzzParseJSONL(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		f.Add(line)
	}
	for _, s := range []string{
		`{"id":"x","time":"2023-05-08T13:56:00Z","text":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","people":["A","B"],"ID":"dup"}`,
		`{"id":1}`, `{"people":null,"title":null}`, `{"text":"bad \xff utf8"}`, `{"Text":"case"}`, `{"id":"x"} `, `  {}`, `{"id":"x","time":"2023-05-08T13:56:00Z"}}`, `{"a":{"b":[1,2,{"c":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		var want jsonlDoc
		wantErr := json.Unmarshal(line, &want)
		got, err := parseJSONL(line)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: parseJSONL error %v, encoding/json %v", line, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parseJSONL %+v, encoding/json %+v", line, got, want)
		}
	})
}
