package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// maxLine bounds one JSONL line; a longer one is reported and skipped.
const maxLine = 16 << 20

// jsonlDoc is one line of a JSONL import (the format in DESIGN.md).
type jsonlDoc struct {
	ID     string   `json:"id"`
	Source string   `json:"source"`
	Time   string   `json:"time"`
	Title  string   `json:"title"`
	Text   string   `json:"text"`
	People []string `json:"people"`
	Thread string   `json:"thread"`
	// MessageID, when the line is a mail, makes it one item with the same
	// message from any other source; an id in angle brackets with an @
	// ("<abc@example.com>") is taken as one too.
	MessageID string `json:"message_id"`
}

// parseJSONL decodes one line: one JSON value and nothing after it but
// spaces. (Decoder.More, used before, is false before a closing brace, so
// a line with one too many was taken.)
func parseJSONL(line []byte) (jsonlDoc, error) {
	var d jsonlDoc
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&d); err != nil {
		return jsonlDoc{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(bytes.TrimSpace(line[dec.InputOffset():])) > 0 {
		return jsonlDoc{}, errors.New("more than one JSON value on the line")
	}
	return d, nil
}

// item validates a line and converts it. Source defaults to "jsonl".
func (d *jsonlDoc) item() (*store.Item, error) {
	if strings.TrimSpace(d.ID) == "" {
		return nil, errors.New(`missing "id"`)
	}
	if strings.TrimSpace(d.Time) == "" {
		return nil, errors.New(`missing "time"`)
	}
	t, err := time.Parse(time.RFC3339, d.Time)
	if err != nil {
		return nil, fmt.Errorf(`"time" %q is not RFC 3339 (like 2002-09-06T10:15:00Z)`, d.Time)
	}
	src := strings.TrimSpace(d.Source)
	if src == "" {
		src = "jsonl"
	}
	msgID := d.MessageID
	if id := strings.TrimSpace(d.ID); msgID == "" && strings.HasPrefix(id, "<") && strings.HasSuffix(id, ">") && strings.Contains(id, "@") {
		msgID = id
	}
	return &store.Item{
		Source:     src,
		ExternalID: d.ID,
		Kind:       "document",
		Thread:     d.Thread,
		Time:       t,
		Title:      d.Title,
		Body:       d.Text,
		People:     d.People,
		MessageID:  msgID,
	}, nil
}

// jsonl imports a JSONL file line by line.
func (r *run) jsonl(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return usageErr("%v", err)
	}
	defer f.Close()
	r.unit, r.total = "bytes", size
	br := bufio.NewReaderSize(f, 64<<10)
	var offset int64
	for n := 1; ; n++ {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		line, consumed, tooLong, err := readLine(br)
		offset += consumed
		if consumed == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("import: read %s: %w", path, err)
		}
		where := fmt.Sprintf("%s: line %d", path, n)
		trimmed := bytes.TrimSpace(line)
		switch {
		case tooLong:
			r.fail(where, fmt.Sprintf("line longer than %d MiB", maxLine>>20))
		case len(trimmed) == 0:
			// blank lines are allowed
		default:
			d, err := parseJSONL(trimmed)
			if err != nil {
				r.fail(where, err.Error())
				break
			}
			it, err := d.item()
			if err != nil {
				r.fail(where, err.Error())
				break
			}
			if err := r.add(record{where: where, item: it}); err != nil {
				return err
			}
		}
		r.advance(offset)
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// readLine reads one line, keeping at most maxLine bytes of it; consumed
// counts them all.
func readLine(br *bufio.Reader) (line []byte, consumed int64, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		consumed += int64(len(chunk))
		if len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
		} else {
			tooLong = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, consumed, tooLong, err
	}
}
