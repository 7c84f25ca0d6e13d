package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

func completionCommand() *command {
	return &command{
		name: "completion",
		args: "bash|zsh|fish",
		summary: "print a shell completion script for commands, their words and flags: " +
			"source <(omnibrain completion bash), or see omnibrain help terminal to keep it",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("usage: omnibrain completion bash|zsh|fish")
			}
			table := completionTable()
			switch args[0] {
			case "bash":
				writeBashCompletion(e.stdout, table)
			case "zsh":
				writeZshCompletion(e.stdout, table)
			case "fish":
				writeFishCompletion(e.stdout, table)
			default:
				return usagef("completion: unknown shell %q%s: want bash, zsh or fish", args[0], didYouMean(args[0], []string{"bash", "zsh", "fish"}))
			}
			return nil
		},
	}
}

// compCommand is what completion knows of a command. It is read from the
// same table --help prints (commands(), their usage lines and flag sets),
// so a new command, word or flag completes without touching this file.
type compCommand struct {
	name, summary string
	words         []string // the literal words its usage line names: mbox, maildir, …
	repeat        bool     // the words may follow one another ([gmail|calendar|github]...)
	files         bool     // it takes a PATH or SOURCE
	flags         []compFlag
}

// compFlag is one flag; value is its placeholder (F, DIR, K, …), "" for a
// switch.
type compFlag struct{ name, value, usage string }

// dash is how the usage line writes the flag: -n, --json.
func (f compFlag) dash() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// wantsFile says whether the flag's value is a file or directory.
func (f compFlag) wantsFile() bool { return f.value == "F" || f.value == "FILE" || f.value == "PATH" }
func (f compFlag) wantsDir() bool  { return f.value == "DIR" }

// literalWord is a word a usage line asks for literally: lower case, as
// opposed to a placeholder (PATH, ID) or a flag.
var literalWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// usageWords reads the literal words of a usage line such as
// "[--progress-every D] mbox|maildir|jsonl PATH": mbox, maildir, jsonl.
func usageWords(args string) (words []string, repeat bool) {
	fields := strings.FieldsFunc(args, func(r rune) bool { return r == ' ' || r == '|' || r == '[' || r == ']' })
	for _, f := range fields {
		f = strings.TrimSuffix(f, "...")
		if literalWord.MatchString(f) && !slices.Contains(words, f) {
			words = append(words, f)
		}
	}
	return words, repeatedWords.MatchString(args)
}

// repeatedWords is a group of words that may follow one another:
// [gmail|calendar|github]...
var repeatedWords = regexp.MustCompile(`\[[a-z][a-z0-9|-]*\]\.\.\.`)

// completionTable is every command as completion sees it, the top level
// (name "") first.
func completionTable() []compCommand {
	var table []compCommand
	top := compCommand{flags: flagsOf(globalFlagSet(&env{}), nil)}
	for _, c := range commands() {
		cc := compCommand{name: c.name, summary: c.summary, files: strings.Contains(c.args, "PATH") || strings.Contains(c.args, "SOURCE")}
		cc.words, cc.repeat = usageWords(c.args)
		if c.name == "help" {
			cc.words = helpWords()
		}
		cc.flags = flagsOf(c.flagSet(&env{}), func(name string) bool { return !isGlobalFlag(name) })
		table = append(table, cc)
		top.words = append(top.words, c.name)
	}
	return append([]compCommand{top}, table...)
}

// globalFlagSet is the flags accepted before the command.
func globalFlagSet(e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("omnibrain", flag.ContinueOnError)
	e.globalFlags(fs)
	fs.Bool("version", false, "print the version")
	return fs
}

func flagsOf(fs *flag.FlagSet, keep func(string) bool) []compFlag {
	var out []compFlag
	fs.VisitAll(func(f *flag.Flag) {
		if keep != nil && !keep(f.Name) {
			return
		}
		value, usage := flag.UnquoteUsage(f)
		out = append(out, compFlag{name: f.Name, value: value, usage: usage})
	})
	return out
}

// globalFlags are the flags every command takes.
func globalCompFlags() []compFlag {
	return flagsOf(globalFlagSet(&env{}), isGlobalFlag)
}

// valueFlags sorts every flag that takes a value by what its value is, for
// the shells' "what follows this flag" cases.
func valueFlags(table []compCommand) (dirs, files, other []string) {
	seen := map[string]bool{}
	for _, cc := range table {
		for _, f := range append(cc.flags, globalCompFlags()...) {
			if f.value == "" || seen[f.dash()] {
				continue
			}
			seen[f.dash()] = true
			switch {
			case f.wantsDir():
				dirs = append(dirs, f.dash())
			case f.wantsFile():
				files = append(files, f.dash())
			default:
				other = append(other, f.dash())
			}
		}
	}
	return dirs, files, other
}

// allFlags is what may follow the command: its own flags and the global
// ones (the top level's flags are the global ones).
func (cc compCommand) allFlags() []string {
	if cc.name == "" {
		return dashes(cc.flags)
	}
	return append(dashes(cc.flags), dashes(globalCompFlags())...)
}

// shellSettings ends a bash or zsh case arm with the command's settings.
func (cc compCommand) shellSettings() string {
	var b strings.Builder
	if cc.files {
		b.WriteString(" files=1")
	}
	if cc.repeat {
		b.WriteString(" repeat=1")
	}
	return b.String() + " ;;\n"
}

func dashes(flags []compFlag) []string {
	var out []string
	for _, f := range flags {
		out = append(out, f.dash())
	}
	return out
}

// caseArm is one arm of a shell case statement for the patterns, or
// nothing when there are none; open is "(" for zsh's style.
func caseArm(patterns []string, action, open string) string {
	if len(patterns) == 0 {
		return ""
	}
	return fmt.Sprintf("    %s%s) %s\n", open, strings.Join(patterns, "|"), action)
}

// shortSummary is a summary cut to its first clause and a menu's width.
func shortSummary(s string) string {
	for _, sep := range []string{"; ", ": ", " — "} {
		s, _, _ = strings.Cut(s, sep)
	}
	return menuWidth(s)
}

// menuWidth cuts s to a completion menu's width, at a word.
func menuWidth(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59])
		if i := strings.LastIndex(s, " "); i > 0 {
			s = s[:i]
		}
		s = strings.TrimRight(s, " ,") + "…"
	}
	return s
}

// singleQuoted quotes s for a POSIX shell, zsh or fish.
func singleQuoted(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

const completionHeader = `# %[1]s completion for omnibrain, generated by 'omnibrain completion %[1]s'
# from the commands and flags of this version.
`

func writeBashCompletion(w io.Writer, table []compCommand) {
	dirs, files, other := valueFlags(table)
	fmt.Fprintf(w, completionHeader, "bash")
	fmt.Fprintf(w, `# Now: source <(omnibrain completion bash)
# Always: omnibrain completion bash > ~/.local/share/bash-completion/completions/omnibrain
_omnibrain() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd="" word="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        %[1]s) ((i++)) ;;
        -*) ;;
        *) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; elif [[ -z $word ]]; then word=${COMP_WORDS[i]}; fi ;;
        esac
    done
    case $prev in
%[2]s%[3]s%[4]s    esac
    local words="" flags="" files="" repeat=""
    case $cmd in
`, strings.Join(append(append(slices.Clone(dirs), files...), other...), "|"),
		caseArm(dirs, `COMPREPLY=($(compgen -d -- "$cur")); return ;;`, ""),
		caseArm(files, `COMPREPLY=($(compgen -f -- "$cur")); return ;;`, ""),
		caseArm(other, `return ;;`, ""))
	for _, cc := range table {
		name := cc.name
		if name == "" {
			name = `""`
		}
		fmt.Fprintf(w, "    %s) words=%s flags=%s", name, singleQuoted(strings.Join(cc.words, " ")), singleQuoted(strings.Join(cc.allFlags(), " ")))
		fmt.Fprint(w, cc.shellSettings())
	}
	fmt.Fprint(w, `    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags --help" -- "$cur"))
    elif [[ -n $words && ( -z $word || -n $repeat ) ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    elif [[ -n $files ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _omnibrain omnibrain
`)
}

func writeZshCompletion(w io.Writer, table []compCommand) {
	dirs, files, other := valueFlags(table)
	fmt.Fprintf(w, "#compdef omnibrain\n"+completionHeader, "zsh")
	fmt.Fprintf(w, `# Now: source <(omnibrain completion zsh)
# Always: omnibrain completion zsh > "${fpath[1]}/_omnibrain" (then start a new zsh)
_omnibrain() {
    local cmd="" word="" i
    for ((i = 2; i < CURRENT; i++)); do
        case ${words[i]} in
        (%[1]s) ((i++)) ;;
        (-*) ;;
        (*) if [[ -z $cmd ]]; then cmd=${words[i]}; elif [[ -z $word ]]; then word=${words[i]}; fi ;;
        esac
    done
    case ${words[CURRENT-1]} in
%[2]s%[3]s%[4]s    esac
    local -a subs flags
    local files="" repeat=""
    case $cmd in
`, strings.Join(append(append(slices.Clone(dirs), files...), other...), "|"),
		caseArm(dirs, `_files -/; return ;;`, "("),
		caseArm(files, `_files; return ;;`, "("),
		caseArm(other, `return ;;`, "("))
	var described []string
	for _, cc := range table[1:] {
		described = append(described, singleQuoted(cc.name+":"+strings.ReplaceAll(shortSummary(cc.summary), ":", `\:`)))
	}
	for _, cc := range table {
		name, subs := cc.name, make([]string, 0, len(cc.words))
		if name == "" {
			name, subs = `""`, described
		} else {
			for _, wd := range cc.words {
				subs = append(subs, singleQuoted(wd))
			}
		}
		fmt.Fprintf(w, "    (%s) subs=(%s) flags=(%s)", name, strings.Join(subs, " "), strings.Join(cc.allFlags(), " "))
		fmt.Fprint(w, cc.shellSettings())
	}
	fmt.Fprint(w, `    esac
    if [[ $PREFIX == -* ]]; then
        compadd -- $flags --help
    elif (( $#subs )) && [[ -z $word || -n $repeat ]]; then
        _describe -t commands omnibrain subs
    elif [[ -n $files ]]; then
        _files
    fi
}
if [[ $funcstack[1] == _omnibrain ]]; then
    _omnibrain "$@"
else
    compdef _omnibrain omnibrain
fi
`)
}

func writeFishCompletion(w io.Writer, table []compCommand) {
	dirs, files, other := valueFlags(table)
	fmt.Fprintf(w, completionHeader, "fish")
	fmt.Fprintf(w, `# Now: omnibrain completion fish | source
# Always: omnibrain completion fish > ~/.config/fish/completions/omnibrain.fish
complete -c omnibrain -f
# The words typed that are neither flags nor flags' values.
function __omnibrain_positionals
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case %s
                set skip 1
            case '-*'
            case '*'
                echo $w
        end
    end
end
# __omnibrain_is CMD [N]: the command is CMD (and N words follow it).
function __omnibrain_is
    set -l p (__omnibrain_positionals)
    test "$p[1]" = "$argv[1]"; or return 1
    test (count $argv) -lt 2; or test (count $p) -eq (math $argv[2] + 1)
end
`, strings.Join(append(append(slices.Clone(dirs), files...), other...), " "))
	flagLine := func(cond string, f compFlag) {
		fmt.Fprint(w, "complete -c omnibrain")
		if cond != "" {
			fmt.Fprintf(w, " -n %s", singleQuoted(cond))
		}
		if len(f.name) == 1 {
			fmt.Fprintf(w, " -s %s", f.name)
		} else {
			fmt.Fprintf(w, " -l %s", f.name)
		}
		switch {
		case f.wantsDir():
			fmt.Fprint(w, " -r -a '(__fish_complete_directories)'")
		case f.wantsFile():
			fmt.Fprint(w, " -r -F")
		case f.value != "":
			fmt.Fprint(w, " -x")
		}
		fmt.Fprintf(w, " -d %s\n", singleQuoted(menuWidth(f.usage)))
	}
	const top = "not count (__omnibrain_positionals) >/dev/null"
	for _, f := range table[0].flags {
		if isGlobalFlag(f.name) {
			flagLine("", f)
		} else {
			flagLine(top, f)
		}
	}
	for _, cc := range table[1:] {
		fmt.Fprintf(w, "complete -c omnibrain -n %s -a %s -d %s\n", singleQuoted(top), cc.name, singleQuoted(shortSummary(cc.summary)))
	}
	for _, cc := range table[1:] {
		is := "__omnibrain_is " + cc.name
		for _, f := range cc.flags {
			flagLine(is, f)
		}
		if len(cc.words) > 0 {
			cond := is + " 0"
			if cc.repeat {
				cond = is
			}
			fmt.Fprintf(w, "complete -c omnibrain -n %s -a %s\n", singleQuoted(cond), singleQuoted(strings.Join(cc.words, " ")))
		}
		if cc.files {
			cond := is
			if len(cc.words) > 0 {
				cond += "; and not " + is + " 0"
			}
			fmt.Fprintf(w, "complete -c omnibrain -n %s -F\n", singleQuoted(cond))
		}
	}
}
