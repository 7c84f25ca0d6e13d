package mailparse

import (
	"strings"
	"testing"
)

func TestSplitReply(t *testing.T) {
	cases := []struct {
		name       string
		text       string
		body       string
		quotedHas  []string
		quotedNone bool
	}{
		{
			name: "gt quote with attribution",
			text: "Sounds good to me.\n\nOn Thu, Aug 22, 2002 at 10:00 AM, John Doe wrote:\n> Shall we ship it?\n> -- \n> John",
			body: "Sounds good to me.", quotedHas: []string{"John Doe wrote:", "> Shall we ship it?"},
		},
		{
			name: "attribution over two lines",
			text: "Yes.\n\nOn Thu, Aug 22, 2002 at 10:00 AM, John Doe\n<john@example.com> wrote:\n\n> Really?",
			body: "Yes.", quotedHas: []string{"<john@example.com> wrote:", "> Really?"},
		},
		{
			name: "inline replies keep the new lines",
			text: "Mark wrote:\n> first question?\nFirst answer.\n\n> second question?\nSecond answer.",
			body: "First answer.\n\nSecond answer.", quotedHas: []string{"> first question?", "> second question?"},
		},
		{
			name: "outlook original message",
			text: "Approved.\n\n -----Original Message-----\nFrom: \tSmith, Bob\nSent:\tMonday, July 02, 2001 3:14 PM\nTo:\tDoe, Jane\nSubject:\tbudget\n\nPlease approve.",
			body: "Approved.", quotedHas: []string{"-----Original Message-----", "Please approve."},
		},
		{
			name: "outlook header block without banner",
			text: "See below.\n\n________________________________\nFrom: Bob Smith <bob@example.com>\nSent: Monday, July 02, 2001 3:14 PM\nTo: Jane Doe\nSubject: RE: budget\n\nOld text.",
			body: "See below.", quotedHas: []string{"From: Bob Smith", "Old text."},
		},
		{
			name: "outlook express",
			text: "Thanks!\n\n----- Original Message -----\nFrom: \"Bob\" <bob@example.com>\nTo: <jane@example.com>\nSent: Monday, July 02, 2001 3:14 PM\n\nOld.",
			body: "Thanks!", quotedHas: []string{"----- Original Message -----", "Old."},
		},
		{
			name: "lotus notes name on date",
			text: "I will be there.\n\n\n\n\"Merideth, Ken\" <MeridetK@kochind.com> on 07/31/2000 08:22:05 AM\nTo: \"'mike.carson@enron.com'\" <mike.carson@enron.com>\ncc:\n\nSubject: merger\n\nOld news.",
			body: "I will be there.", quotedHas: []string{"on 07/31/2000 08:22:05 AM", "Old news."},
		},
		{
			name: "lotus notes name then date line",
			text: "Count me in.\n\n\n\nKim Ward@ENRON\n05/14/2001 10:14 AM\nTo: Phillip K Allen/HOU/ECT@ECT\ncc:\nSubject: Re: golf\n\nAre you in?",
			body: "Count me in.", quotedHas: []string{"Kim Ward@ENRON", "Are you in?"},
		},
		{
			name: "signature",
			text: "The build is green.\n\n-- \nJane Doe\nRelease manager",
			body: "The build is green.", quotedHas: []string{"Jane Doe\nRelease manager"},
		},
		{
			name: "mailing list footer",
			text: "Patch attached.\n\n_______________________________________________\nExmh-workers mailing list\nExmh-workers@redhat.com\nhttps://listman.redhat.com/mailman/listinfo/exmh-workers",
			body: "Patch attached.", quotedHas: []string{"Exmh-workers mailing list"},
		},
		{
			name: "only quotes: everything stays body",
			text: "> forwarded words\n> more words",
			body: "> forwarded words\n> more words", quotedNone: true,
		},
		{
			name: "plain text untouched",
			text: "Hi,\n\nOn Monday we meet.\nFrom: the minutes of last week\n\nBye",
			body: "Hi,\n\nOn Monday we meet.\nFrom: the minutes of last week\n\nBye", quotedNone: true,
		},
		{
			name: "dash lines are not signatures when nothing follows",
			text: "Result:\n--\n",
			body: "Result:\n--", quotedNone: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, quoted := SplitReply(c.text)
			if body != c.body {
				t.Errorf("body = %q\nwant   %q", body, c.body)
			}
			if c.quotedNone && quoted != "" {
				t.Errorf("quoted = %q, want none", quoted)
			}
			for _, q := range c.quotedHas {
				if !strings.Contains(quoted, q) {
					t.Errorf("quoted lacks %q:\n%s", q, quoted)
				}
			}
		})
	}
}

func TestHTMLToTextQuotesBlockquotes(t *testing.T) {
	text := HTMLToText(`<div>Agreed.</div><div class="gmail_quote">On Mon, Sep 2, 2002 Bob wrote:<blockquote>Is it <i>agreed</i>?<br>Really?</blockquote></div>`)
	want := "Agreed.\nOn Mon, Sep 2, 2002 Bob wrote:\n\n> Is it agreed?\n> Really?"
	if text != want {
		t.Fatalf("text = %q\nwant   %q", text, want)
	}
	body, quoted := SplitReply(text)
	if body != "Agreed." || !strings.Contains(quoted, "> Really?") {
		t.Fatalf("split: body %q quoted %q", body, quoted)
	}
}

func TestHTMLToText(t *testing.T) {
	cases := map[string]string{
		"<p>a</p><p>b</p>":                             "a\n\nb",
		"x<br>y<br><br>z":                              "x\ny\n\nz",
		"<pre>  keep\n    spacing</pre>":               "keep\n    spacing",
		"caf&eacute; &lt;tag&gt; &#8364;":              "café <tag> €",
		"<img alt=\"Logo\"> text":                      "Logo text",
		"<table><tr><td>1</td><td>2</td></tr></table>": "1 2",
		"unclosed <b>bold <i>italic":                   "unclosed bold italic",
		"":                                             "",
	}
	for in, want := range cases {
		if got := HTMLToText(in); got != want {
			t.Errorf("HTMLToText(%q) = %q, want %q", in, got, want)
		}
	}
}
