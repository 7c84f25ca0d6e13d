package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/omnibrain/omnibrain/plugins/sandbox"
)

// request is what a local plugin reads on stdin.
type request struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// IdempotencyKey is set for approved actions: the same key means the
	// same approved action, so a plugin can tell a retry from a new one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Op is "run" (default) or "find": has the action with this key
	// already been done? (answer {"found": true, "remote_id": "..."})
	Op string `json:"op,omitempty"`
}

// response is what a local plugin writes on stdout.
type response struct {
	Output   string `json:"output"`
	Error    string `json:"error,omitempty"`
	Found    bool   `json:"found,omitempty"`
	RemoteID string `json:"remote_id,omitempty"`
}

// maxOutput bounds what is read from a local plugin.
const maxOutput = 1 << 20

// runLocal checks the plugin is still the confirmed one, then runs its
// program in the sandbox with req on stdin and reads one JSON response.
// confined refuses to run it without Landlock (a read call the owner
// does not see).
func (p *plugin) runLocal(ctx context.Context, tool *ToolDecl, req request, confined bool) (*response, error) {
	man := p.local
	if err := p.held(); err != nil {
		return nil, err
	}
	if err := man.verify(); err != nil {
		p.m.log.Error("plugin refused", "plugin", man.Name, "err", err)
		if p.m.opts.Report != nil {
			p.m.opts.Report.Degrade(HealthName, err)
		}
		return nil, err
	}
	timeout := time.Duration(man.Timeout)
	if tool != nil && tool.Timeout > 0 {
		timeout = time.Duration(tool.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "omnibrain-plugin-"+man.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("plugin %s: private home: %w", man.Name, err)
	}
	defer os.RemoveAll(work)
	spec := sandbox.Spec{
		Path: man.commandPath(), Args: man.Args, ReadDirs: []string{man.dir}, WorkDir: work,
		RequireLandlock: confined && !p.pin.Trust,
		Limits:          sandbox.Limits{CPUSeconds: uint64(timeout/time.Second) + 1},
	}
	env := []string{"OMNIBRAIN_PLUGIN=" + man.Name}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	cmd, err := sandbox.Command(ctx, p.m.opts.Helper, spec, env)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", man.Name, err)
	}
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxOutput, 8<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Kill the whole process group, so a plugin's children die with it,
	// and do not wait forever for pipes a stray child holds open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("plugin %s: no answer within %s: %w", man.Name, timeout, context.DeadlineExceeded)
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == sandbox.ExitRefused:
		return nil, fmt.Errorf("plugin %s: not run: %s (%w)", man.Name, strings.TrimSpace(stderr.String()), errNotSent)
	case err != nil:
		return nil, fmt.Errorf("plugin %s: %w: %s", man.Name, err, strings.TrimSpace(stderr.String()))
	case stdout.over:
		return nil, fmt.Errorf("plugin %s: output larger than %d bytes", man.Name, maxOutput)
	}
	var resp response
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &resp); err != nil {
		return nil, fmt.Errorf("plugin %s: output is not the expected JSON {\"output\": …}: %v", man.Name, err)
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("plugin %s: %s", man.Name, resp.Error)
	}
	if p.m.opts.Report != nil {
		p.m.opts.Report.Success(HealthName)
	}
	return &resp, nil
}

// limitedBuffer keeps at most max bytes and remembers it overflowed.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
