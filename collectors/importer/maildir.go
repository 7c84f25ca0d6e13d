package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/collectors/mailparse"
)

// sentFolder matches the names mail programs give the folder of sent mail:
// Sent, Sent Items, Sent Mail, Sent Messages, Enron's sent_items,
// _sent_mail and _sent, Maildir++'s .Sent.
var sentFolder = regexp.MustCompile(`(?i)^[._]*sent([ _.-]*(items|mail|messages))?$`)

// skippedFiles are a maildir's bookkeeping files, never messages.
func skippedFile(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, ".") || strings.HasPrefix(n, "dovecot") || strings.HasPrefix(n, "courier") ||
		n == "maildirfolder" || n == "subscriptions"
}

// maildirFile is one message file with the folder it was found in.
type maildirFile struct {
	path   string
	folder string // relative to the import root, without cur/new
	sent   bool
}

// collectMaildir lists the message files under root: a maildir (cur/new,
// Maildir++ .Folders) or any tree of folders with one message per file
// (the Enron layout of nested folders with numbered files). tmp folders
// hold deliveries still being written and are left alone. Sent folders
// come first, so the owner's addresses are learned before the inbox is
// counted.
func collectMaildir(root string) ([]maildirFile, error) {
	var files []maildirFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && d.Name() == "tmp" && isDir(filepath.Join(filepath.Dir(p), "cur")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || skippedFile(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		folder, sent := folderOf(rel)
		files = append(files, maildirFile{path: p, folder: folder, sent: sent})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import: walk %s: %w", root, err)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].sent && !files[j].sent })
	return files, nil
}

// folderOf names a message's folder from its directory relative to the
// root: cur/new dropped, Maildir++ dots turned into slashes.
func folderOf(rel string) (string, bool) {
	var parts []string
	for _, p := range strings.Split(filepath.ToSlash(rel), "/") {
		if p == "." || p == "" || p == "cur" || p == "new" {
			continue
		}
		for _, q := range strings.Split(strings.TrimPrefix(p, "."), ".") {
			if q != "" {
				parts = append(parts, q)
			}
		}
	}
	sent := false
	for _, p := range parts {
		sent = sent || sentFolder.MatchString(p)
	}
	return strings.Join(parts, "/"), sent
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// maildir imports every message file under root.
func (r *run) maildir(root string) error {
	files, err := collectMaildir(root)
	if err != nil {
		return err
	}
	r.unit, r.total = "messages", int64(len(files))
	r.report()
	for i, f := range files {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		r.done = int64(i + 1)
		raw, err := readMessageFile(f.path)
		switch {
		case err != nil:
			r.fail(f.path, err.Error())
		default:
			parse := mailparse.ParseOptions{DateFallback: func() (time.Time, string, bool) { return neighbourDate(f.path) }}
			rec, m, err := mailRecord(raw, parse, mailparse.ItemOptions{Source: "maildir", Folder: f.folder, Outbound: f.sent}, f.path)
			if err != nil {
				r.fail(f.path, err.Error())
				break
			}
			rec.undated = m.DateUncertain
			if f.sent {
				r.learnOwner(m.From.Email)
			}
			if err := r.add(rec); err != nil {
				return err
			}
		}
		r.advance(r.done)
	}
	return nil
}

// readMessageFile reads a message file, refusing one too large to parse
// before reading it.
func readMessageFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > mailparse.MaxSize {
		return nil, fmt.Errorf("message larger than %d MiB", mailparse.MaxSize>>20)
	}
	return os.ReadFile(path)
}

// maildirName is a maildir file name: the delivery time in Unix seconds,
// then a dot ("1204680122.V801I2fM64291.host:2,S").
var maildirName = regexp.MustCompile(`^([0-9]{9,10})\.`)

// neighbourDate dates a message file that has no date of its own: by the
// delivery time in its maildir file name, else by the nearest message in
// the same folder that has one (folders keep mail in order of arrival:
// the Enron converter numbered it so). Not by the file's modification
// time, which in a copied archive is the day of the copy and would put
// old mail at the top of today's.
func neighbourDate(path string) (time.Time, string, bool) {
	name := filepath.Base(path)
	if m := maildirName.FindStringSubmatch(name); m != nil {
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(sec, 0).UTC(), "the delivery time in its maildir file name", true
	}
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return time.Time{}, "", false
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !skippedFile(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Slice(names, func(i, j int) bool { return numberedBefore(names[i], names[j]) })
	at := sort.Search(len(names), func(i int) bool { return !numberedBefore(names[i], name) })
	// Nearest first, the one before it first: up to 10 each way.
	for d := 1; d <= 10; d++ {
		for _, i := range []int{at - d, at + d} {
			if i < 0 || i >= len(names) {
				continue
			}
			raw, err := readMessageFile(filepath.Join(dir, names[i]))
			if err != nil {
				continue
			}
			if m, err := mailparse.Parse(raw); err == nil {
				return m.Date, "the neighbouring message " + filepath.Join(filepath.Base(dir), names[i]), true
			}
		}
	}
	return time.Time{}, "", false
}

// numberedBefore orders file names by their leading number when both have
// one ("9." before "10."), else as strings.
func numberedBefore(a, b string) bool {
	na, errA := strconv.Atoi(strings.TrimRight(a, "."))
	nb, errB := strconv.Atoi(strings.TrimRight(b, "."))
	if errA == nil && errB == nil && na != nb {
		return na < nb
	}
	return a < b
}
