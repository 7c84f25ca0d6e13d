package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

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
			rec, m, err := mailRecord(raw, mailparse.ItemOptions{Source: "maildir", Folder: f.folder, Outbound: f.sent}, f.path)
			if err != nil {
				r.fail(f.path, err.Error())
				break
			}
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
