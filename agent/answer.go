package agent

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/router"
)

// Answer is the result of a run or a chat turn.
type Answer struct {
	RunID      string        `json:"run_id,omitempty"`
	SessionID  string        `json:"session_id,omitempty"`
	Text       string        `json:"text"`
	Citations  []Citation    `json:"citations"`
	Proposals  []ProposalRef `json:"proposals,omitempty"`
	Stop       Stop          `json:"stop"`
	Iterations int           `json:"iterations"`
	ToolCalls  int           `json:"tool_calls"`
	Usage      router.Usage  `json:"usage"`
	// Retrieval says whether the owner's data was consulted for the answer.
	Retrieval bool `json:"retrieval"`
	// NoModel marks an answer made without a language model.
	NoModel bool `json:"no_model,omitempty"`
	// ModelError says why the model gave no answer when it failed
	// (unreachable, erroring): chat then answers with search results.
	ModelError string `json:"model_error,omitempty"`
}

// Citation is a stored item an answer cites as [N].
type Citation struct {
	N      int       `json:"n"`
	ID     string    `json:"id"` // the id the item was imported or collected with
	ItemID int64     `json:"item_id"`
	Title  string    `json:"title"`
	Time   time.Time `json:"time"`
	Source string    `json:"source"`
}

// ProposalRef is a proposal a run created; it waits for the owner.
type ProposalRef struct {
	ID    string         `json:"id"`
	Kind  approval.Kind  `json:"kind"`
	Title string         `json:"title"`
	State approval.State `json:"state"`
}

// citeRef matches [3] and [3, 5] markers.
var citeRef = regexp.MustCompile(`\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]`)

// citations resolves the [n] markers of text against the numbered items,
// in order of first mention; numbers that name no item are ignored (a
// model cannot cite what no tool showed it).
func citations(text string, items []Cited) []Citation {
	out := []Citation{}
	seen := map[int]bool{}
	for _, m := range citeRef.FindAllStringSubmatch(text, -1) {
		for _, part := range strings.Split(m[1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 1 || n > len(items) || seen[n] {
				continue
			}
			seen[n] = true
			it := items[n-1]
			out = append(out, Citation{N: n, ID: it.ExternalID, ItemID: it.ItemID, Title: it.Title, Time: it.Time, Source: it.Source})
		}
	}
	return out
}
