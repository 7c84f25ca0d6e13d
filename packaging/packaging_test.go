package packaging

import (
	"encoding/xml"
	"strings"
	"testing"
)

func testService() Service {
	return Service{
		Name:        "omnibrain",
		Description: "omnibrain proactive personal agent",
		Command:     []string{"/home/ann/My Apps/omnibrain", "--home", "/home/ann/.omni 100%", "run"},
		Home:        "/home/ann/.omni 100%",
	}
}

func TestSystemdUnit(t *testing.T) {
	unit, err := SystemdUnit(testService())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ExecStart="/home/ann/My Apps/omnibrain" "--home" "/home/ann/.omni 100%%" "run"`,
		`Environment="OMNIBRAIN_HOME=/home/ann/.omni 100%%"`,
		"WantedBy=default.target",
		"KillSignal=SIGTERM",
		"Restart=on-failure",
		"UMask=0077",
		"Description=omnibrain proactive personal agent",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if strings.Contains(unit, "multi-user.target") {
		t.Errorf("a user unit must not want multi-user.target:\n%s", unit)
	}
	// Every section a unit needs, in order.
	iUnit, iSvc, iInst := strings.Index(unit, "[Unit]"), strings.Index(unit, "[Service]"), strings.Index(unit, "[Install]")
	if iUnit < 0 || iSvc < iUnit || iInst < iSvc {
		t.Errorf("sections out of order:\n%s", unit)
	}
}

func TestLaunchdPlistIsWellFormed(t *testing.T) {
	s := testService()
	s.Home = "/Users/ann/<omni>&co"
	s.Command = []string{"/usr/local/bin/omnibrain", "--home", s.Home, "run"}
	plist, err := LaunchdPlist(s)
	if err != nil {
		t.Fatal(err)
	}
	// Decode the plist generically and check the program arguments survived escaping.
	dec := xml.NewDecoder(strings.NewReader(plist))
	dec.Strict = true
	var strs []string
	inString := false
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, plist)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			inString = tk.Name.Local == "string"
		case xml.CharData:
			if inString {
				strs = append(strs, string(tk))
			}
		case xml.EndElement:
			inString = false
		}
	}
	joined := strings.Join(strs, "|")
	for _, want := range []string{"omnibrain|/usr/local/bin/omnibrain|--home|/Users/ann/<omni>&co|run", "/Users/ann/<omni>&co/logs/omnibrain.err.log"} {
		if !strings.Contains(joined, want) {
			t.Errorf("plist strings %q lack %q", joined, want)
		}
	}
	if !strings.Contains(plist, "<key>RunAtLoad</key>\n\t<true/>") {
		t.Errorf("plist does not run at load:\n%s", plist)
	}
}

func TestRenderRejectsBadInput(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Service)
	}{
		{"relative executable", func(s *Service) { s.Command[0] = "omnibrain" }},
		{"no command", func(s *Service) { s.Command = nil }},
		{"relative home", func(s *Service) { s.Home = "data" }},
		{"newline injection", func(s *Service) { s.Home = "/tmp/x\nExecStartPre=/bin/evil" }},
		{"template braces", func(s *Service) { s.Home = "/tmp/{{x}}" }},
		{"name with slash", func(s *Service) { s.Name = "../x" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testService()
			tc.mutate(&s)
			if _, err := SystemdUnit(s); err == nil {
				t.Error("SystemdUnit accepted it")
			}
			if _, err := LaunchdPlist(s); err == nil {
				t.Error("LaunchdPlist accepted it")
			}
		})
	}
}
