package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
)

// fromLine matches an mbox separator: "From " then the envelope sender and
// a date with a clock ("From 1781@xxx Thu Aug 22 12:36:23 +0000 2002").
// Requiring the clock keeps a body line "From here on…" after a blank line
// from splitting a message in mboxes that do not escape it.
var fromLine = regexp.MustCompile(`^From \S+ +\S.*\d{1,2}:\d{2}`)

// escapedFrom matches a body line that an mboxrd/mboxo writer escaped.
var escapedFrom = regexp.MustCompile(`^>+From `)

// mboxReader splits an mbox stream into messages without holding more than
// one message in memory.
type mboxReader struct {
	r         *bufio.Reader
	offset    int64  // bytes consumed
	sep       []byte // the From line that starts the next message
	sepStart  int64
	prevBlank bool // the last complete line was blank (true at the start)
	index     int
}

func newMboxReader(r io.Reader) *mboxReader {
	return &mboxReader{r: bufio.NewReaderSize(r, 64<<10), prevBlank: true}
}

// mboxMessage is one message cut from the mbox.
type mboxMessage struct {
	raw    []byte // from its From line on, ">From " lines unescaped
	start  int64  // byte offset of its first line
	index  int    // 1-based position in the file
	tooBig bool   // longer than mailparse.MaxSize: raw holds only the start
}

// Next returns the next message, or io.EOF. Text before the first From
// line comes back as a message of its own (a single .eml given as an mbox
// still imports; junk fails to parse and is reported).
func (m *mboxReader) Next() (*mboxMessage, error) {
	m.index++
	msg := &mboxMessage{start: m.sepStart, index: m.index}
	var buf bytes.Buffer
	if m.sep != nil {
		buf.Write(m.sep)
		m.sep = nil
	} else {
		msg.start = m.offset
	}
	lineStart := true
	for {
		chunk, err := m.r.ReadSlice('\n')
		if len(chunk) > 0 {
			start := m.offset
			m.offset += int64(len(chunk))
			complete := chunk[len(chunk)-1] == '\n'
			if lineStart && m.prevBlank && bytes.HasPrefix(chunk, []byte("From ")) && fromLine.Match(chunk) {
				if len(bytes.TrimSpace(buf.Bytes())) > 0 {
					m.sep, m.sepStart = bytes.Clone(chunk), start
					m.prevBlank = false
					msg.raw = bytes.TrimRight(buf.Bytes(), "\r\n") // the blank line before belongs to the format
					return msg, nil
				}
				buf.Reset()
				msg.start = start
			}
			line := chunk
			if lineStart && escapedFrom.Match(line) {
				line = line[1:]
			}
			if buf.Len()+len(line) <= mailparse.MaxSize {
				buf.Write(line)
			} else {
				msg.tooBig = true
			}
			if complete {
				m.prevBlank = lineStart && len(bytes.TrimRight(chunk, "\r\n")) == 0
			}
			lineStart = complete
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(bytes.TrimSpace(buf.Bytes())) == 0 {
				return nil, io.EOF
			}
			msg.raw = bytes.TrimRight(buf.Bytes(), "\r\n")
			return msg, nil
		case err != nil:
			return nil, err
		}
	}
}

// mbox imports an mbox file, streaming it message by message.
func (r *run) mbox(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return usageErr("%v", err)
	}
	defer f.Close()
	r.unit, r.total = "bytes", size
	rd := newMboxReader(f)
	// A message with no date of its own is dated like the one before it
	// in the archive (mbox exports keep mail in order), marked uncertain.
	var prev time.Time
	var prevWhere string
	fallback := func() (time.Time, string, bool) {
		return prev, "the message before it in the mbox (" + prevWhere + ")", !prev.IsZero()
	}
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		msg, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: read %s: %w", path, err)
		}
		where := fmt.Sprintf("%s: message %d at byte %d", path, msg.index, msg.start)
		if msg.tooBig {
			r.fail(where, fmt.Sprintf("message larger than %d MiB", mailparse.MaxSize>>20))
			r.advance(rd.offset)
			continue
		}
		rec, m, err := mailRecord(msg.raw, mailparse.ParseOptions{DateFallback: fallback}, mailparse.ItemOptions{Source: "mbox"}, where)
		if err != nil {
			r.fail(where, err.Error())
			r.advance(rd.offset)
			continue
		}
		if m.DateUncertain == "" {
			prev, prevWhere = m.Date, fmt.Sprintf("message %d", msg.index)
		}
		rec.undated = m.DateUncertain
		if hasLabel(m.Labels, "Sent") {
			rec.item.Meta["outbound"] = true
			rec.mail.Outbound = true
			r.learnOwner(m.From.Email)
		}
		if err := r.add(rec); err != nil {
			return err
		}
		r.advance(rd.offset)
	}
}

func hasLabel(labels []string, want string) bool {
	for _, l := range labels {
		if strings.EqualFold(l, want) {
			return true
		}
	}
	return false
}
