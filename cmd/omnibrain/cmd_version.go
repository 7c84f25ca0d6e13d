package main

import (
	"context"
	"runtime"
	"runtime/debug"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the version",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("version takes no arguments")
			}
			v := struct {
				Version string `json:"version"`
				Go      string `json:"go"`
				OS      string `json:"os"`
				Arch    string `json:"arch"`
				Commit  string `json:"commit,omitempty"`
			}{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						v.Commit = s.Value
					}
				}
			}
			if e.json {
				return e.printJSON(v)
			}
			e.printf("omnibrain %s (%s, %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
			return nil
		},
	}
}
