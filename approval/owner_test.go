package approval_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ownerMakers are the only places an approval.Owner may be made: the two
// channels the owner decides through. Everything else — the agent, its
// tools, plugins, the proactive engine — can only propose, so no model
// output can ever reach a decision.
var ownerMakers = map[string]bool{
	"api":      true, // the local API: socket or token holder
	"telegram": true, // the bot, for the paired owner only
}

func TestOnlyOwnerChannelsMakeOwners(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || name == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		pkgDir := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // not ours to judge (a file being written by someone)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				if ok && id.Name == "approval" && (x.Sel.Name == "APIOwner" || x.Sel.Name == "TelegramOwner") && !ownerMakers[pkgDir] {
					t.Errorf("%s: %s makes an approval.Owner; only %v may", fset.Position(x.Pos()), pkgDir, keys(ownerMakers))
				}
			case *ast.CompositeLit:
				if sel, ok := x.Type.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "approval" && sel.Sel.Name == "Owner" {
						t.Errorf("%s: approval.Owner{} literal outside the approval package", fset.Position(x.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d files checked: the walk did not see the repository", checked)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
